/* SPDX-License-Identifier: MIT */
/* Two socket filters with a bpf-to-bpf subprogram each, compiled with -g
 * so the kernel gets BTF func_info and line_info (test_bpf.sh). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __attribute__((noinline)) int mix(int a, int b)
{
	int r = a * 3;

	if (b & 1)
		r += b;
	else
		r -= b >> 1;
	return r;
}

SEC("socket")
int dyn_filter_a(struct __sk_buff *skb)
{
	int len = skb->len, acc = 0;

	for (int i = 0; i < 4; i++)
		acc += mix(len, i);
	return acc & 0xffff;
}

static __attribute__((noinline)) int scale(int v)
{
	if (v > 1000)
		return v / 7;
	return v * 5 + 1;
}

SEC("socket")
int dyn_filter_b(struct __sk_buff *skb)
{
	int v = skb->len;

	v = scale(v) + scale(v + 3);
	return v & 0xfff;
}

char LICENSE[] SEC("license") = "GPL";
