// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_latency.c - how long ksmd keeps a CPU from a real-time task while
 * it forgets a large mm: one that exits in the middle of a pass, and
 * everything at once on run=2.
 *
 * A probe thread, SCHED_FIFO, sleeps PROBE_US at a time and records how
 * late each wake-up is, pinned to one CPU with ksmd (whose CPUs are given
 * back at the end), so that it waits for
 * whatever ksmd does there without a chance to reschedule (the test
 * kernel is not preemptible). A child maps PAGES pages, pages 2k and
 * 2k+1 alike, which merge.
 *
 *   latency_exit	the child is killed mid-pass; the probe runs until
 *	ksmd completes two full scans after the child is reaped;
 *   latency_run2	the child, merged again, stays; run=2 unmerges and
 *	forgets it, and the probe runs until the write returns.
 *   settings_during_run2	(samepage) the child, merged again, stays;
 *	once run=2 has copied UNSHARING_KB of it, a write of
 *	max_page_sharing (refused with EBUSY while KSM pages exist) returns
 *	within WRITE_MAX_MS and before run=2 ends, and the child's pages
 *	hold their content after. Mainline holds ksmd's mutex for the whole
 *	of run=2, so the write waits for all of it there (KSM_FORCE=1 runs
 *	it on stock to see).
 *
 * The bound, LATE_MAX_MS, is of the order of what one gather of ksmd
 * forgets (4,096 entries) plus the emulation's own jitter; the worst
 * lateness is printed either way. Mainline forgets an exited mm's
 * rmap_items, and every mm's on run=2, in one loop without a chance to
 * reschedule, but at the size a test guest holds that loop is short
 * (stock: 11 to 12 ms here), so both kernels pass: the test guards ours,
 * whose steps are bounded whatever the mm's size, and shows the figures.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

#define PAGES		(128 * 1024)	/* 512 MiB */
#define SEED		0x1a7e
#define PROBE_US	1000
#define LATE_MAX_MS	100.0
#define PROBE_CPU	0
#define WRITE_MAX_MS	200.0

static volatile int probing;
static double worst_ms;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *probe(void *arg)
{
	struct timespec d = { 0, PROBE_US * 1000 };
	double t, late;

	(void)arg;
	while (probing) {
		t = now_ms();
		nanosleep(&d, NULL);
		late = now_ms() - t - PROBE_US / 1e3;
		if (late > worst_ms)
			worst_ms = late;
	}
	return NULL;
}

/* Start the probe on PROBE_CPU at SCHED_FIFO 50; 0 or an error number. */
static int probe_start(pthread_t *th)
{
	worst_ms = 0;
	probing = 1;
	return fifo_thread_start(th, PROBE_CPU, 50, probe);
}

static double probe_stop(pthread_t th)
{
	probing = 0;
	pthread_join(th, NULL);
	return worst_ms;
}

static bool child_merged(void *arg)
{
	return ksm_stat(*(pid_t *)arg, "ksm_merging_pages") == PAGES;
}

static void report(const char *name, double late)
{
	ktap_diag("%s: worst wake-up %.1f ms late (bound %.0f ms)", name, late,
		  LATE_MAX_MS);
	CHECK(late <= LATE_MAX_MS, "%.1f ms late", late);
}

/* From a reset KSM, a child whose pages all merged; 0 on failure. */
static pid_t merged_child(void)
{
	pid_t pid;

	CHECK(ksm_reset() == 0, "reset");
	pid = pairs_child_start(PAGES, SEED);
	if (!CHECK(pid > 0, "child"))
		return 0;
	if (!CHECK(ksm_wait_until(child_merged, &pid, 12), "merged")) {
		kill_all(&pid, 1);
		return 0;
	}
	return pid;
}

static void test_exit(void)
{
	pthread_t th;
	pid_t pid;
	long f;

	pid = merged_child();
	if (!pid)
		goto out;
	/* Mid-pass: ksmd is somewhere in the child's pages. */
	f = ksm_read("full_scans");
	ksm_wait_scans_until(f + 1, KSM_WAIT_SECONDS);
	usleep(20000);
	if (!CHECK(probe_start(&th) == 0, "probe"))
		goto out;
	kill_all(&pid, 1);
	pid = 0;
	CHECK(ksm_wait_scans_with_page(2, SEED + 1, 0), "two scans");
	report("exit", probe_stop(th));
	CHECK(ksm_read("pages_sharing") == 0 && ksm_read("pages_shared") == 0,
	      "shared %ld sharing %ld after the exit",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
out:
	if (pid > 0)
		kill_all(&pid, 1);
	ktap_result(checks_passed(), "latency_exit");
}

static void test_run2(void)
{
	pthread_t th;
	pid_t pid;

	pid = merged_child();
	if (!pid)
		goto out;
	if (!CHECK(probe_start(&th) == 0, "probe"))
		goto out;
	CHECK(ksm_write("run", 2) == 0, "run=2");
	report("run=2", probe_stop(th));
	CHECK(ksm_stat(pid, "ksm_merging_pages") == 0, "merging %ld after run=2",
	      ksm_stat(pid, "ksm_merging_pages"));
out:
	if (pid > 0)
		kill_all(&pid, 1);
	ktap_result(checks_passed(), "latency_run2");
}

struct run2 {
	int err;
	double end_ms;
};

static void *run2_thread(void *arg)
{
	struct run2 *r = arg;

	r->err = ksm_write("run", 2);
	r->end_ms = now_ms();
	return NULL;
}

/* run=2 is under way: its copies took UNSHARING_KB of free memory. */
#define UNSHARING_KB	(32 * 1024)

static bool unsharing(void *arg)
{
	return meminfo_kb("MemFree") < *(long *)arg - UNSHARING_KB;
}

static void test_settings_during_run2(bool samepage)
{
	struct run2 r = { .err = 1 };
	double t, write_ms;
	pthread_t th;
	long free_kb;
	pid_t pid;
	int err;

	if (!samepage) {
		ktap_skip_named("settings_during_run2", "samepage only");
		return;
	}
	pid = merged_child();
	if (!pid)
		goto out;
	free_kb = meminfo_kb("MemFree");
	if (!CHECK(pthread_create(&th, NULL, run2_thread, &r) == 0,
		   "run=2 thread"))
		goto out;
	CHECK(ksm_wait_until(unsharing, &free_kb, 2), "run=2 began");
	t = now_ms();
	err = ksm_write("max_page_sharing", 1000);
	write_ms = now_ms() - t;
	pthread_join(th, NULL);
	ktap_diag("settings write %.1f ms, run=2 %.1f ms after it began",
		  write_ms, r.end_ms - t);
	CHECK(err == -EBUSY, "max_page_sharing during run=2: %d", err);
	CHECK(r.err == 0, "run=2: %d", r.err);
	CHECK(write_ms <= WRITE_MAX_MS, "settings write %.1f ms > %.0f",
	      write_ms, WRITE_MAX_MS);
	CHECK(t + write_ms < r.end_ms, "the write returned after run=2");
	CHECK(ksm_stat(pid, "ksm_merging_pages") == 0,
	      "merging %ld after run=2", ksm_stat(pid, "ksm_merging_pages"));
	CHECK(pairs_child_content_ok(pid), "the child's pages hold their content");
	pid = 0;
out:
	if (pid > 0)
		kill_all(&pid, 1);
	ktap_result(checks_passed(), "settings_during_run2");
}

int main(void)
{
	static const char *const names[] = { "latency_exit", "latency_run2",
					     "settings_during_run2" };
	bool samepage = ksm_read("max_kernel_pages") >= 0 || getenv("KSM_FORCE");
	cpu_set_t ksmd_cpus;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (ksmd_pin(PROBE_CPU, &ksmd_cpus))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "cannot pin ksmd");
	test_exit();
	test_run2();
	sched_setaffinity(ksmd_pid(), sizeof(ksmd_cpus), &ksmd_cpus);
	test_settings_during_run2(samepage);
	ksm_reset();
	return ktap_finish();
}
