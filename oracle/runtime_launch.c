/* The frozen runtime's launcher (oracle/runtime.py): every tool in the copy's bin/ is this program, linked
 * statically (it needs no loader), which starts the copy's own file of the name it was called by (elf/NAME)
 * through the copy's loader and libraries. So a shell of the copy finds `cat` or `stat` on its PATH and opens no
 * file of the host's. ROOT, the copy's folder, is compiled in (runtime_root.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "runtime_root.h"

int main(int argc, char **argv) {
    const char *called = (const char *)getauxval(AT_EXECFN);  /* the path it was started by */
    const char *slash = called ? strrchr(called, '/') : NULL;
    const char *name = slash ? slash + 1 : called ? called : "";
    static char loader[4096], libs[4096], program[4096];
    snprintf(loader, sizeof loader, "%s/libs/ld.so", ROOT);
    snprintf(libs, sizeof libs, "%s/libs", ROOT);
    snprintf(program, sizeof program, "%s/elf/%s", ROOT, name);
    char *args[argc + 8];
    int n = 0;
    args[n++] = loader;
    args[n++] = "--inhibit-cache";
    args[n++] = "--library-path";
    args[n++] = libs;
    args[n++] = "--argv0";
    args[n++] = argc > 0 ? argv[0] : program;
    args[n++] = program;
    for (int i = 1; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    execv(loader, args);
    fprintf(stderr, "%s: the runtime's loader cannot start it: %s\n", name, strerror(errno));
    return 127;
}
