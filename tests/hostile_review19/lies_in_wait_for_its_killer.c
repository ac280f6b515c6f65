/* A process of a run's uid that the run's process group kill missed (tests/test_run_uid.py), under the run's system
   call filter: it lies in wait for the grader's killer (oracle/run_uid.py kill_uid), the one other process its uid
   will have, and takes it over with ptrace before it kills: at its kill(2) the killer makes socket(AF_INET) instead,
   which the filter refuses this process. Prints one line of what happened; exit status 0 once it has the killer,
   2 when none came within argv[1] seconds, or none it could trace. x86_64 (the registers named). */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int other_of_my_uid(void) {
    DIR *proc = opendir("/proc");
    struct dirent *entry;
    int found = 0;
    while (proc && (entry = readdir(proc)) && !found) {
        int pid = atoi(entry->d_name);
        char path[64], line[256];
        unsigned ruid;
        if (pid <= 0 || pid == getpid()) continue;
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        FILE *status = fopen(path, "r");
        if (!status) continue;
        while (fgets(line, sizeof line, status))
            if (sscanf(line, "Uid: %u", &ruid) == 1) { found = ruid == getuid() ? pid : 0; break; }
        fclose(status);
    }
    if (proc) closedir(proc);
    return found;
}

/* the killer, traced: runs it to its kill(2), which becomes socket(AF_INET, SOCK_DGRAM, 0); that call's result */
static long turn_its_kill(int killer) {
    int status;
    waitpid(killer, &status, 0);
    ptrace(PTRACE_SETOPTIONS, killer, 0, PTRACE_O_TRACESYSGOOD);
    ptrace(PTRACE_SYSCALL, killer, 0, 0);
    kill(killer, SIGCONT);
    for (int entering = 1;; ) {
        if (waitpid(killer, &status, 0) < 0 || !WIFSTOPPED(status)) return -1000;  /* it ended first */
        int deliver = 0;
        if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
            struct user_regs_struct regs;
            ptrace(PTRACE_GETREGS, killer, 0, &regs);
            if (entering && regs.orig_rax == SYS_kill) {
                regs.orig_rax = SYS_socket, regs.rdi = AF_INET, regs.rsi = SOCK_DGRAM, regs.rdx = 0;
                ptrace(PTRACE_SETREGS, killer, 0, &regs);
                ptrace(PTRACE_SYSCALL, killer, 0, 0);
                waitpid(killer, &status, 0);
                ptrace(PTRACE_GETREGS, killer, 0, &regs);
                ptrace(PTRACE_DETACH, killer, 0, 0);
                return (long)regs.rax;
            }
            entering = !entering;
        } else if (WSTOPSIG(status) != SIGSTOP && WSTOPSIG(status) != SIGTRAP) {
            deliver = WSTOPSIG(status);
        }
        ptrace(PTRACE_SYSCALL, killer, 0, deliver);
    }
}

static volatile int caught, spinning = 1;

/* one of three: each sends SIGSTOP to every other process of this uid until one of them reaches one, so that one
   is on a CPU whenever the killer becomes this uid, however busy the machine */
static void *lie_in_wait(void *unused) {
    (void)unused;
    while (spinning)
        if (kill(-1, SIGSTOP) == 0) caught = 1, spinning = 0;  /* else ESRCH: no other process of this uid yet */
    return NULL;
}

int main(int argc, char **argv) {
    int own = socket(AF_INET, SOCK_DGRAM, 0);
    int refused = own < 0 ? errno : 0;
    time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 60);
    pthread_t spinner;
    for (int ready = 0; time(NULL) < end; ready = 1) {
        if (spinning && !caught)
            for (int i = 0; i < 3; i++) pthread_create(&spinner, NULL, lie_in_wait, NULL), pthread_detach(spinner);
        if (!ready) printf("ready\n"), fflush(stdout);  /* lying in wait from here on */
        while (!caught && time(NULL) < end) usleep(100);
        caught = 0;
        int killer = other_of_my_uid();
        if (!killer) { spinning = 1; continue; }
        /* stopped; not traceable while it is the grader's fork (not dumpable): let on, and asked again at once, until
           it has executed its program (dumpable again: an attach during its execve waits for the execve's end, and
           stops it before its first instruction); a killer that stays untraceable for a second is let be */
        int attached = 0;
        for (time_t until = time(NULL) + 2; time(NULL) < until; ) {
            kill(killer, SIGCONT);  /* again each time: a spinner's last SIGSTOP may come after the first */
            if ((attached = ptrace(PTRACE_ATTACH, killer, 0, 0) == 0) || errno == ESRCH) break;
        }
        if (!attached) {
            while (time(NULL) < end) sleep(1);
            break;
        }
        long made = turn_its_kill(killer);
        printf("took over the killer %d: its kill(-1, SIGKILL) became socket(AF_INET) = %ld (this process's own: %s)\n",
               killer, made, refused ? strerror(refused) : "made");
        return 0;
    }
    kill(-1, SIGCONT);  /* nothing of its uid is left stopped */
    printf("no killer came, or none it could trace\n");
    return 2;
}
