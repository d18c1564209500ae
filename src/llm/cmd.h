/*
 * cmd: the --llm-cmd runner: a request's prompt goes to a command's stdin
 * (a shell command line, in its own process group); its stdout is the
 * answer, its stderr the error detail; a deadline kills it (see llm.h).
 */
#ifndef EVO_LLM_CMD_H
#define EVO_LLM_CMD_H

#include "llm/job.h"

/* Start job j's --llm-cmd process, feeding it the prompt;
 * service its pipes, exit and deadline at time now (ms). */
void llm_cmd_start(Llm *l, Job *j);
void llm_cmd_service(Llm *l, Job *j, double now);

#endif
