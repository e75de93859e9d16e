/* compiler/main.c: the tfgc executable's entry point. */
#include "compiler/compiler.h"

int
main(int argc, char **argv)
{
	return tfgc_main(argc, argv);
}
