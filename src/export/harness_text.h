/*
 * harness_text: the fixed text of the harness program (harness_text.c),
 * private to src/export/harness*.c.
 */
#ifndef EVO_HARNESS_TEXT_H
#define EVO_HARNESS_TEXT_H

extern const char text_device[];    /* section 3: the gate's input generator */
extern const char text_host_head[]; /* host includes, error check, Buffer */
extern const char text_tmap[];      /* encode_tmap() */
extern const char text_host_main[]; /* fill, compare, time, main() */

#endif
