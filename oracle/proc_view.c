/* The /proc of a run that needs none, under bubblewrap (oracle/proc_view.py; oracle/run_view.py PROCFS): started by
 * bwrap once its mounts are made, as `proc_view PROGRAM ARGS...`, it puts itself under a Landlock ruleset that
 * grants every handled access beneath each entry of "/" but "proc", then execs PROGRAM. /proc (a real procfs) then
 * has no rule: every open beneath it is EACCES, while stat, access and readlink answer as on a host,
 * as under the Landlock fallback (oracle/landlock.py `Ruleset.build(proc=False)`); bubblewrap's read-only mounts keep
 * refusing writes everywhere else. The numbers are oracle/landlock.py's, compiled in by oracle/proc_view.py:
 * SYS_CREATE, SYS_ADD, SYS_RESTRICT (the system calls), RULE_PATH_BENEATH, HANDLED (the file system rights the
 * fallback handles on this kernel) and FILE_RIGHTS (those a rule on a file may hold). Any failure ends the run (127):
 * a run is never started without its ruleset. */
#define _GNU_SOURCE  /* O_PATH */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct ruleset_attr { uint64_t handled_access_fs; };
struct path_beneath_attr { uint64_t allowed_access; int32_t parent_fd; } __attribute__((packed));

static int refuse(const char *what) {
    fprintf(stderr, "proc_view: %s: %s\n", what, strerror(errno));
    return 127;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        errno = EINVAL;
        return refuse("no program to start");
    }
    struct ruleset_attr attr = { HANDLED };
    int ruleset = (int)syscall(SYS_CREATE, &attr, sizeof attr, 0);
    if (ruleset < 0)
        return refuse("landlock_create_ruleset");
    DIR *root = opendir("/");
    if (root == NULL)
        return refuse("opendir /");
    struct dirent *entry;
    while ((errno = 0, entry = readdir(root)) != NULL) {
        const char *name = entry->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, "proc"))
            continue;
        int beneath = openat(dirfd(root), name, O_PATH | O_CLOEXEC);  /* a link (/bin): the folder it names */
        if (beneath < 0) {
            if (errno == ENOENT)  /* a link to nothing (/lib64 where /usr has none) */
                continue;
            return refuse(name);
        }
        struct stat info;
        if (fstat(beneath, &info) != 0)
            return refuse(name);
        struct path_beneath_attr rule = { S_ISDIR(info.st_mode) ? HANDLED : HANDLED & FILE_RIGHTS, beneath };
        if (syscall(SYS_ADD, ruleset, RULE_PATH_BENEATH, &rule, 0) != 0)
            return refuse(name);
        close(beneath);
    }
    if (errno != 0)
        return refuse("readdir /");
    closedir(root);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)  /* set by bwrap already; Landlock requires it */
        return refuse("prctl(PR_SET_NO_NEW_PRIVS)");
    if (syscall(SYS_RESTRICT, ruleset, 0) != 0)
        return refuse("landlock_restrict_self");
    close(ruleset);
    execv(argv[1], argv + 1);
    return refuse(argv[1]);
}
