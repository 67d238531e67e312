"""Landlock (Linux >= 5.13) through ctypes: limit a task's file access, TCP and signals, unprivileged."""

from __future__ import annotations

import ctypes
import os
import stat

if False:  # annotations only: the server does not import typing
    from typing import Any

_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446  # same numbers on every architecture
_VERSION_FLAG = 1
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 16, 32, 64, 128
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 256, 512, 1024, 2048, 4096
REFER, TRUNCATE = 8192, 16384  # ABI 2, ABI 3
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2  # ABI 4
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2  # ABI 6

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi() -> int:
    """The Landlock ABI version of this kernel, or 0 when Landlock is unavailable."""
    r = _libc.syscall(_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION_FLAG))
    return max(int(r), 0)


def handled_fs(version: int) -> int:
    """Every filesystem right this ABI version knows (IOCTL_DEV is left unhandled on purpose)."""
    rights = (1 << 13) - 1
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    return rights


def open_rules(rw_dirs: list[str], ro_dirs: list[str], files: dict[str, int]) -> list[tuple[int, int]]:
    """O_PATH fds and the rights to grant below each: full access to ``rw_dirs`` (which must exist), read
    and execute for ``ro_dirs``, the given rights on single ``files`` (paths missing here are skipped).
    Open them before dropping privileges: an unprivileged uid may not be able to reach them."""
    rules = []
    for path, rights, required in ([(p, -1, True) for p in rw_dirs] + [(p, READ_RIGHTS, False) for p in ro_dirs]
                                   + [(p, r, False) for p, r in files.items()]):
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            if required:
                raise
            continue
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS
        rules.append((fd, rights))
    return rules


def close_rules(rules: list[tuple[int, int]]) -> None:
    for fd, _ in rules:
        try:
            os.close(fd)
        except OSError:
            pass


def restrict(version: int, rules: list[tuple[int, int]]) -> None:
    """Confine this process and its future children to ``rules`` (from :func:`open_rules`)."""
    ruleset = create(version, rules)
    try:
        restrict_self(ruleset)
    finally:
        os.close(ruleset)


def create(version: int, rules: list[tuple[int, int]]) -> int:
    """A ruleset fd for ``rules`` (from :func:`open_rules`), to be applied by :func:`restrict_self` in this
    process or in any process forked later. Besides the rules it denies TCP and, from ABI 6, signals and abstract
    unix sockets towards processes outside the domain it creates."""
    fs = handled_fs(version)
    attr = _RulesetAttr(fs, (NET_BIND_TCP | NET_CONNECT_TCP) if version >= 4 else 0,
                        (SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL) if version >= 6 else 0)
    size = 24 if version >= 6 else (16 if version >= 4 else 8)
    ruleset = _libc.syscall(_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for fd, rights in rules:
            rule = _PathBeneath(rights & fs, fd)
            if _libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                             ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for fd {fd}")
    except BaseException:
        os.close(ruleset)
        raise
    return int(ruleset)


def restrict_self(ruleset: int) -> None:
    """Enter a new Landlock domain (nested in the current one) made of a ruleset from :func:`create`."""
    if _libc.syscall(_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")


def restrictor(ruleset: int) -> Any:
    """:func:`restrict_self` for ``ruleset`` with its arguments made now: a process forked later calls it
    touching fewer pages (each is a copy there)."""
    args = (_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    call = _libc.syscall

    def restrict() -> None:
        if call(*args) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    return restrict
