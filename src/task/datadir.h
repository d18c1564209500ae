/*
 * datadir: the folders that hold evoeng's data (templates/ and prompts/),
 * for a binary run from anywhere: the environment, an installed tree,
 * the source tree it was built from. Used for the default task (cli) and
 * the LLM's prompts (llm).
 */
#ifndef EVO_TASK_DATADIR_H
#define EVO_TASK_DATADIR_H

/* The file or directory rel (relative: "prompts", "templates/x/task.json")
 * in the first data directory that has it readable, in this order:
 * $EVOENG_DATA_DIR, <the binary's folder>/../share/evoeng (an installed
 * tree wherever it lies: a --destdir install, a moved prefix), the
 * installed data directory (EVO_DATADIR, <prefix>/share/evoeng, where
 * `meson install` puts templates/ and prompts/), the source tree evoeng
 * was built from (EVO_SOURCE_ROOT). Fresh string, or NULL when none has
 * it. */
char *datadir_file(const char *rel);

/* For an error: every place rel was looked for (the current directory,
 * then the data directories above, each named) and how to point evoeng at
 * its data (EVOENG_DATA_DIR). Fresh string. */
char *datadir_searched(const char *rel);

#endif
