/*
 * init_params: the params `evoeng init` proposes for a kernel file: one per
 * #ifndef/#define knob whose default is an integer, with a list of values
 * around the default: 0 and 1 for a switch (a knob the file uses as a
 * condition: #if KNOB, if (KNOB), KNOB ? :) or a default of 0; d/4 to 4d
 * for a power of two d (at least 1: 64 gives 16 32 64 128 256); d/2, d, 2d
 * otherwise. Constraints (init_spec.c) then rule out what cannot compile.
 */
#ifndef EVO_INIT_PARAMS_H
#define EVO_INIT_PARAMS_H

#include <jansson.h>

#include "compile/kscan.h"

/* The params of the kernel file text (sc: its scan) as the spec's
 * "params" object, in file order: {"KNOB": {"values": [...], "default":
 * d}}. Knobs whose default is no integer are named in notes' "_params"
 * (they follow the params they name). Fresh object; may be empty. */
json_t *init_params(const char *text, const Kscan *sc, json_t *notes);

/* An integer written as C writes constants ("64", "(64)", "16u", "0x40"):
 * 1 with *v, or 0 when s is not one. */
int init_int_value(const char *s, long long *v);

#endif
