/*
 * cmd_unbuilt: commands that exist in the command line but whose work is
 * not built yet. Each says so and exits with EVO_EXIT_UNBUILT, never
 * silently. This file shrinks as the commands land.
 */
#include "commands.h"

static EvoExit unbuilt(const char *name)
{
    errorf("'%s' is not built yet in this version of evoeng (exit code %d)", name, EVO_EXIT_UNBUILT);
    return EVO_EXIT_UNBUILT;
}

EvoExit cmd_run(const Settings *s) { (void)s; return unbuilt("run"); }
EvoExit cmd_resume(const Settings *s) { (void)s; return unbuilt("resume"); }
EvoExit cmd_export(const Settings *s) { (void)s; return unbuilt("export"); }
EvoExit cmd_check(const Settings *s) { (void)s; return unbuilt("check"); }
EvoExit cmd_bench(const Settings *s) { (void)s; return unbuilt("bench"); }
EvoExit cmd_worker(const Settings *s) { (void)s; return unbuilt("__worker"); }
