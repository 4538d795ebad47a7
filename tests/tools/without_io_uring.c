/* tests/tools/without_io_uring.c: runs a program with io_uring refused, as a container runtime's
 * default seccomp profile refuses it (issue #52, part 3): a seccomp filter answers
 * io_uring_setup, io_uring_enter and io_uring_register with EPERM (or, with --enosys, ENOSYS,
 * as a kernel without io_uring does), then execs the program, which inherits the filter.
 *
 *     without_io_uring [--enosys] PROGRAM [ARGS...]
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "without_io_uring: add this machine's AUDIT_ARCH"
#endif

int main(int argc, char** argv) {
    int first = 1;
    unsigned refusal = EPERM;
    if (argc > 1 && strcmp(argv[1], "--enosys") == 0) {
        refusal = ENOSYS;
        first = 2;
    }
    if (argc <= first) {
        fprintf(stderr, "usage: without_io_uring [--enosys] PROGRAM [ARGS...]\n");
        return 2;
    }
    struct sock_filter filter[] = {
        /* Another architecture's system call numbers mean other calls: let them through. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_register, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (refusal & SECCOMP_RET_DATA)),
    };
    struct sock_fprog program = {(unsigned short)(sizeof(filter) / sizeof(filter[0])), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
        perror("without_io_uring: installing the seccomp filter");
        return 2;
    }
    /* The filter holds (and the program inherits it through exec): io_uring_setup is refused. */
    if (syscall(__NR_io_uring_setup, 2, NULL) != -1 || errno != (int)refusal) {
        fprintf(stderr, "without_io_uring: io_uring_setup was not refused with the errno asked for\n");
        return 2;
    }
    execvp(argv[first], argv + first);
    perror("without_io_uring: exec");
    return 127;
}
