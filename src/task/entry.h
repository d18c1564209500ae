/*
 * entry: the canonical spelling of the names a task gives its kernels'
 * entry points (see entry.c for the grammar).
 */
#ifndef EVO_TASK_ENTRY_H
#define EVO_TASK_ENTRY_H

#include <stddef.h>

/* The canonical spelling of an entry name: a C identifier, a namespaced
 * kernel (ns::k) or a template instantiation (k<128, 64>, ns::k<float, 4>),
 * blanks normalised (one after each comma, one between two words, none
 * elsewhere), as a fresh string; such a name is compiled as an NVRTC name
 * expression and launched by its lowered name. NULL for anything else,
 * with why (optional, why_size bytes) saying what and at which column. */
char *task_entry_canon(const char *s, char *why, size_t why_size);

#endif
