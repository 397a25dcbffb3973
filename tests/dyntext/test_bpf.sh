#!/bin/sh
# test_bpf.sh PTCAPTURE LOADER CHECK BPFOBJ WORKDIR
# Records bpf_loader loading BPF programs (with BTF func_info/line_info)
# with ptcapture, then checks dyntext's names and source lines for their
# JIT addresses against what the loader saw while each program was loaded.
# Exit 77 (skip) without root, BPF, kernel BTF or bpftool.
set -u
ptcap=$1 loader=$2 check=$3 obj=$4 work=$5
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (CAP_BPF and CAP_PERFMON) to load BPF and record sideband"
	exit 77
fi
if [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "SKIP: no kernel BTF (/sys/kernel/btf/vmlinux)"
	exit 77
fi
if ! command -v bpftool >/dev/null 2>&1 && [ ! -x /usr/sbin/bpftool ]; then
	echo "SKIP: bpftool not found (the oracle's source lines come from it)"
	exit 77
fi
PATH=$PATH:/usr/sbin:/sbin
export PATH
rm -rf "$work" && mkdir -p "$work" || exit 1
"$loader" "$obj" "$work/probe.txt"
rc=$?
if [ $rc = 77 ]; then
	echo "SKIP: BPF program loading not permitted here"
	exit 77
fi
[ $rc = 0 ] || exit 1
"$ptcap" record -o "$work/cap.ptd" -- "$loader" "$obj" "$work/oracle.txt" || exit 1
exec "$check" "$work/cap.ptd" "$work/oracle.txt"
