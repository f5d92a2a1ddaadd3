// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_hwpoison.c - memory failure of a KSM page. Three children share N
 * KSM pages; one of them poisons one with madvise(MADV_HWPOISON). As
 * mainline 6.12 does it: the poisoner gets SIGBUS BUS_MCEERR_AR at once;
 * with vm.memory_failure_early_kill=1 every other sharer gets SIGBUS
 * BUS_MCEERR_AO at its own address of the page at once, with 0 nothing
 * until it touches the page; either way a later touch gets SIGBUS
 * BUS_MCEERR_AR. The other KSM pages keep their content, ksmd drops the
 * poisoned page's sharers from its counts, and goes on scanning with no
 * splat in the kernel log. Later copies of a poisoned page's content merge
 * with each other, never into the poisoned KSM page (mainline joins no KSM
 * page that no mapping is left of, and run=2 forgets unmapped ones); the
 * pages they map are checked in /proc/kpageflags. The test program itself
 * poisons nothing, so it survives; each run poisons two pages for good.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

#ifndef MADV_HWPOISON
#define MADV_HWPOISON 100
#endif
#ifndef BUS_MCEERR_AR
#define BUS_MCEERR_AR 4
#endif
#ifndef BUS_MCEERR_AO
#define BUS_MCEERR_AO 5
#endif

#define N 16		/* KSM pages shared by the children */
#define KIDS 3
#define EARLY_KILL "/proc/sys/vm/memory_failure_early_kill"

static long saved_early_kill = -1;

static int set_early_kill(long value)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%ld\n", value);
	return write_file(EARLY_KILL, buf);
}

static void restore_early_kill(void)
{
	if (saved_early_kill >= 0)
		set_early_kill(saved_early_kill);
}

/* In a child: what its SIGBUS handler saw. */
static volatile sig_atomic_t sigs, last_code, touching;
static void *volatile last_addr;
static sigjmp_buf touch_env;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	sigs++;
	last_code = si->si_code;
	last_addr = si->si_addr;
	if (touching) {
		touching = 0;
		siglongjmp(touch_env, 1);
	}
}

/* 'n' no SIGBUS, 'o'/'a' BUS_MCEERR_AO/_AR at @page, 'w' elsewhere. */
static char sig_summary(void *page)
{
	if (!sigs)
		return 'n';
	if (last_addr != page)
		return 'w';
	if (last_code == BUS_MCEERR_AO)
		return 'o';
	return last_code == BUS_MCEERR_AR ? 'a' : '?';
}

struct poison_args {
	unsigned int seed;
	int victim;	/* the page poisoned */
};

/*
 * A sharer: N pages (seed, j). 'p' poisons the victim ('0' or 'e'), 's'
 * tells what SIGBUS it got so far, 't' touches the victim and tells what
 * that got, 'c' checks the other pages ('k'/'x').
 */
static int kid_sharer(void *arg, int i, int cmd, int reply)
{
	struct poison_args *a = arg;
	struct sigaction sa = { .sa_sigaction = on_sigbus,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	char *p = map_pages(N), *victim = p + a->victim * page_size;
	size_t bad;
	char c;

	for (int j = 0; j < N; j++)
		fill_page(p, j, a->seed);
	if (merge_pages(p, N) || sigaction(SIGBUS, &sa, NULL))
		return 1;
	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		switch (c) {
		case 'p':
			if (madvise(victim, page_size, MADV_HWPOISON)) {
				ktap_diag("child %d: MADV_HWPOISON: %s", i,
					  strerror(errno));
				kid_reply(reply, 'e');
			} else {
				kid_reply(reply, '0');
			}
			break;
		case 's':
			if (sigs)
				ktap_diag("child %d: %d SIGBUS, si_code %d, si_addr %s",
					  i, (int)sigs, (int)last_code,
					  last_addr == victim ? "the page" :
					  "elsewhere");
			kid_reply(reply, sig_summary(victim));
			break;
		case 't':
			sigs = 0;
			if (!sigsetjmp(touch_env, 1)) {
				touching = 1;
				(void)*(volatile char *)victim;
				touching = 0;
			}
			kid_reply(reply, sig_summary(victim));
			break;
		case 'c':
			bad = 0;
			for (int j = 0; j < N; j++)
				if (j != a->victim)
					bad += !page_holds(p, j, a->seed);
			kid_reply(reply, bad ? 'x' : 'k');
			break;
		}
	}
	return 0;
}

static void ksm_diag_counts(const char *when)
{
	ktap_diag("%s: shared %ld sharing %ld unshared %ld, HardwareCorrupted %ld kB",
		  when, ksm_read("pages_shared"), ksm_read("pages_sharing"),
		  ksm_read("pages_unshared"), meminfo_kb("HardwareCorrupted"));
}

/*
 * Child 0 poisons page @victim of the N KSM pages the children share.
 * @early: vm.memory_failure_early_kill.
 */
static void test_poison(const char *name, int early, unsigned int seed,
			int victim)
{
	struct poison_args a = { .seed = seed, .victim = victim };
	int splats = kernel_splats();
	char r[KIDS], want;
	long hw;
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(set_early_kill(early) == 0, "memory_failure_early_kill=%d",
	      early);
	CHECK(kids_start(&k, KIDS, kid_sharer, &a) == 0, "fork");
	CHECK(kids_collect(&k, r), "ready");
	CHECK(ksm_wait_counts(N, (KIDS - 1) * N, 0, 0), "merged");
	ksm_diag_counts("before");
	hw = meminfo_kb("HardwareCorrupted");

	CHECK(kid_call(&k, 0, 'p', &r[0]) && r[0] == '0', "poison (%c)", r[0]);
	ksm_diag_counts("poisoned");
	CHECK(meminfo_kb("HardwareCorrupted") == hw + (long)page_size / 1024,
	      "HardwareCorrupted %ld -> %ld kB", hw, meminfo_kb("HardwareCorrupted"));
	/* Every SIGBUS is sent before madvise() returns. */
	for (int i = 0; i < KIDS; i++) {
		want = i == 0 ? 'a' : early ? 'o' : 'n';
		CHECK(kid_call(&k, i, 's', &r[i]) && r[i] == want,
		      "child %d got '%c', want '%c'", i, r[i], want);
	}
	for (int i = 0; i < KIDS; i++)
		CHECK(kid_call(&k, i, 't', &r[i]) && r[i] == 'a',
		      "child %d touching the page got '%c', want 'a'", i, r[i]);
	for (int i = 0; i < KIDS; i++)
		CHECK(kid_call(&k, i, 'c', &r[i]) && r[i] == 'k',
		      "child %d other pages (%c)", i, r[i]);
	CHECK(ksm_wait_counts(N - 1, (KIDS - 1) * (N - 1), 0, 0),
	      "the poisoned page's sharers dropped");
	ksm_diag_counts("after scans");
	for (int i = 0; i < KIDS; i++)
		CHECK(kid_call(&k, i, 'c', &r[i]) && r[i] == 'k',
		      "child %d other pages after scans (%c)", i, r[i]);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	CHECK(ksm_wait_counts(0, 0, 0, 0), "nothing left");
	CHECK(ksm_wait_scans_with_page(2, seed, 1000), "ksmd goes on scanning");
	CHECK(kernel_splats() == splats, "%d new splats in the log",
	      kernel_splats() - splats);
	ktap_result(checks_passed(), "%s", name);
}

/* The /proc/kpageflags word of the page mapped at @p; 0 if unknown. */
static unsigned long long kpageflags(const void *p)
{
	unsigned long long flags = 0;
	unsigned long pfn = page_pfn(p);
	int fd = open("/proc/kpageflags", O_RDONLY);

	if (fd < 0)
		return 0;
	if (!pfn || pread(fd, &flags, sizeof(flags), pfn * sizeof(flags)) !=
	    sizeof(flags))
		flags = 0;
	close(fd);
	return flags;
}

#define KPF_HWPOISON	19
#define KPF_KSM		21

/*
 * Two new copies of a poisoned page's content, and two copies of another:
 * both pairs merge, and no copy is merged into the poisoned KSM page.
 * @reset: go through run=2 first.
 */
static void test_no_remerge(unsigned int seed, int victim, bool reset,
			    const char *name)
{
	char *p = map_pages(4);
	int splats = kernel_splats();
	unsigned long long f0, f2;

	if (reset)
		CHECK(ksm_reset() == 0, "reset");
	fill_pattern(p, seed, victim);
	fill_pattern(p + page_size, seed, victim);
	fill_pattern(p + 2 * page_size, seed, victim + 1);
	fill_pattern(p + 3 * page_size, seed, victim + 1);
	CHECK(merge_pages(p, 4) == 0, "madvise");
	CHECK(ksm_wait_counts(2, 2, 0, 0), "merged");
	f0 = kpageflags(p);
	f2 = kpageflags(p + 2 * page_size);
	ktap_diag("kpageflags %#llx and %#llx", f0, f2);
	CHECK(page_pfn(p) && page_pfn(p) == page_pfn(p + page_size),
	      "copies of the poisoned content merged");
	CHECK(f0 & (1ULL << KPF_KSM), "on a KSM page");
	CHECK(!(f0 & (1ULL << KPF_HWPOISON)), "not on the poisoned page");
	CHECK(f2 & (1ULL << KPF_KSM) && !(f2 & (1ULL << KPF_HWPOISON)),
	      "other pair");
	CHECK(holds_pattern(p, seed, victim) &&
	      holds_pattern(p + page_size, seed, victim) &&
	      holds_pattern(p + 2 * page_size, seed, victim + 1) &&
	      holds_pattern(p + 3 * page_size, seed, victim + 1), "content");
	CHECK(ksm_wait_scans(2), "ksmd goes on scanning");
	CHECK(kernel_splats() == splats, "%d new splats in the log",
	      kernel_splats() - splats);
	munmap(p, 4 * page_size);
	ktap_result(checks_passed(), "%s", name);
}

int main(void)
{
	static const char *const names[] = {
		"hwpoison_early_kill", "hwpoison_late_kill",
		"hwpoison_page_not_reused",
		"hwpoison_page_not_reused_after_run2",
	};
	time_t started = time(NULL);

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	saved_early_kill = read_long(EARLY_KILL);
	if (saved_early_kill < 0 || meminfo_kb("HardwareCorrupted") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no memory failure");
	atexit(restore_early_kill);
	test_poison(names[0], 1, 0x7901, 3);
	test_poison(names[1], 0, 0x7902, 5);
	test_no_remerge(0x7902, 5, false, names[2]);
	test_no_remerge(0x7901, 3, true, names[3]);
	ktap_diag("%ld s", (long)(time(NULL) - started));
	return ktap_finish();
}
