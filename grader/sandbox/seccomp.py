"""The worker's seccomp filter: system calls a grading worker never needs fail with EPERM.

A classic BPF program (struct sock_filter, 8 bytes per instruction) built here on the
grader's side and handed to the launcher as bytes; the launcher installs it with
prctl(PR_SET_SECCOMP) just before it execs the worker, after no_new_privs. Denied calls
return an error (EPERM) rather than killing the process, so Python raises a clean OSError
and the student reads an ordinary exception. Standard library only.

What it closes (docs/sandbox.md): the kernel keyring (a channel between submissions that
share a uid), AF_VSOCK sockets (a vsock port bound in a sandbox blocks the host's), ptrace
and cross-process memory access, kernel modules and kexec, eBPF, perf events, mounts and
new namespaces (`unshare`, `setns`, `clone` with CLONE_NEW* flags), userfaultfd, io_uring
(whose requests seccomp cannot see), SysV IPC and POSIX message queues (the host's, outside
namespaces), and the clock and swap controls. `clone3` answers
ENOSYS, so the C library falls back to `clone`, whose flags a filter can read.
"""

from __future__ import annotations

import struct

EPERM, ENOSYS = 1, 38
AF_VSOCK = 40
# CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
# CLONE_NEWNET (CLONE_NEWTIME, 0x80, shares clone's exit-signal byte and works only via clone3)
CLONE_NAMESPACE_FLAGS = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
)

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000

# name: (x86_64, aarch64); None where the architecture has no such call.
DENIED: dict[str, tuple[int | None, int | None]] = {
    "add_key": (248, 217),
    "keyctl": (250, 219),
    "request_key": (249, 218),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "unshare": (272, 97),
    "setns": (308, 268),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "syslog": (103, 116),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "adjtimex": (159, 171),
    "clock_adjtime": (305, 266),
    "lookup_dcookie": (212, 18),
    "fanotify_init": (300, 262),
    "vhangup": (153, 58),
    "iopl": (172, None),
    "ioperm": (173, None),
    # SysV IPC and POSIX message queues: outside namespaces they are the host's, a channel
    # between submissions (none of Python, numpy, torch or BLAS needs them: strace'd)
    "shmget": (29, 194),
    "shmat": (30, 196),
    "shmctl": (31, 195),
    "shmdt": (67, 197),
    "msgget": (68, 186),
    "msgsnd": (69, 189),
    "msgrcv": (70, 188),
    "msgctl": (71, 187),
    "semget": (64, 190),
    "semop": (65, 193),
    "semctl": (66, 191),
    "semtimedop": (220, 192),
    "mq_open": (240, 180),
    "mq_unlink": (241, 181),
    "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183),
    "mq_notify": (244, 184),
    "mq_getsetattr": (245, 185),
}
_SOCKET = {"x86_64": 41, "aarch64": 198}
_CLONE = {"x86_64": 56, "aarch64": 220}
_CLONE3 = 435

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K, _JGE_K, _JSET_K = 0x15, 0x35, 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000
# offsets in struct seccomp_data: nr (int), arch (u32), instruction_pointer (u64), args[6] (u64)
_NR, _ARCH, _ARG0 = 0, 4, 16  # the low 32 bits of args[0] on little-endian machines


def _op(code: int, k: int = 0, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


def _deny_if(nr: int, errno: int = EPERM) -> list[tuple[int, int, int, int]]:
    """if nr == `nr`: return ERRNO(errno)."""
    return [_op(_JEQ_K, nr, 0, 1), _op(_RET_K, RET_ERRNO | errno)]


def program(machine: str) -> list[tuple[int, int, int, int]] | None:
    """The filter's instructions (code, jt, jf, k) for `machine`, or None where we have no table."""
    if machine not in _AUDIT_ARCH:
        return None
    column = 0 if machine == "x86_64" else 1
    ops = [
        _op(_LD_W_ABS, _ARCH),
        _op(_JEQ_K, _AUDIT_ARCH[machine], 1, 0),
        _op(_RET_K, RET_KILL_PROCESS),  # another ABI (i386 on x86_64): numbers mean other calls
        _op(_LD_W_ABS, _NR),
    ]
    if machine == "x86_64":  # the x32 ABI: the same calls with bit 30 set
        ops += [_op(_JGE_K, _X32_SYSCALL_BIT, 0, 1), _op(_RET_K, RET_ERRNO | EPERM)]
    for numbers in DENIED.values():
        if numbers[column] is not None:
            ops += _deny_if(numbers[column])
    ops += _deny_if(_CLONE3, ENOSYS)
    ops += [  # socket(AF_VSOCK, ...): EPERM; any other family: allowed
        _op(_JEQ_K, _SOCKET[machine], 0, 4),
        _op(_LD_W_ABS, _ARG0),
        _op(_JEQ_K, AF_VSOCK, 0, 1),
        _op(_RET_K, RET_ERRNO | EPERM),
        _op(_RET_K, RET_ALLOW),
    ]
    ops += [  # clone(flags, ...) with a new namespace: EPERM
        _op(_JEQ_K, _CLONE[machine], 0, 3),
        _op(_LD_W_ABS, _ARG0),
        _op(_JSET_K, CLONE_NAMESPACE_FLAGS, 0, 1),
        _op(_RET_K, RET_ERRNO | EPERM),
        _op(_RET_K, RET_ALLOW),
    ]
    return ops


def worker_filter(machine: str) -> bytes | None:
    """The filter as the bytes of a struct sock_filter array, or None (no table for `machine`)."""
    ops = program(machine)
    if ops is None:
        return None
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in ops)
