#include "msg.h"
int main(void) { return EVO_EXIT_OK; }
