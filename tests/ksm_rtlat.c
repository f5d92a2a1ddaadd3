// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_rtlat.c - what ksmd's work costs a real-time task, cyclictest-style:
 * the wake-up latency of a SCHED_FIFO thread on ksmd's CPU, as its worst
 * and its 99.9th percentile, while KSM
 *
 *   rtlat_idle	does nothing (the guest's own floor: emulation, timer);
 *   rtlat_merge	merges MERGE_PAGES pages of a child (pairs);
 *   rtlat_unmerge	unmerges them all on run=2 (written from ksmd's CPU,
 *	where the unmerging then runs);
 *   rtlat_migrate	moves one KSM page with SHARERS sharers between the
 *	two NUMA nodes, MOVES times (move_pages(2), MPOL_MF_MOVE_ALL, called
 *	from ksmd's CPU, where the rmap walk then runs).
 *
 * Each prints "rtlat PHASE: worst W us, p99.9 P us, N wake-ups";
 * scripts/rt-latency.sh runs this on our kernel and on stock built from
 * the same configuration (Debian's PREEMPT_RT one) and sets them side by
 * side. A phase also checks what it did (merged, unmerged, moved, content
 * intact) and that no wake-up came later than LATE_MAX_US: a bound for
 * a kernel that can preempt ksmd anywhere a lock allows, which the
 * emulation's own jitter stays well under. On a kernel that is not
 * preemptible the probe waits for whole batches (tests/ksm_latency.c is
 * that test), so this one is run on RT kernels only.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

#define MERGE_PAGES	(64 * 1024)	/* 256 MiB, pages 2k and 2k+1 alike */
#define SHARERS		(16 * 1024)	/* mappings of the migrated KSM page */
#define MOVES		16
#define SEED		0x27a1
/*
 * The probe's period: a prime number of microseconds, so that its
 * wake-ups drift across every phase of the scheduler tick (4 ms at
 * Debian's HZ=250) within two seconds. At 500 us, every eighth wake-up
 * met the tick at the one phase the run happened to start in: a run's
 * 99.9th percentile then either held the tick's own cost (when that
 * phase overlapped the tick's handler) or not, on either kernel, as a
 * coin toss per run, and 1 in 8 wake-ups was enough to move it.
 */
#define PERIOD_US	487
#define HIST_US		(200 * 1000)	/* 1 us bins up to 200 ms */
#define LATE_MAX_US	50000
#define PROBE_CPU	0
#define IDLE_MS		3000
#define MPOL_MF_MOVE_ALL	(1 << 2)

static volatile int probing;
static unsigned int hist[HIST_US];
static long worst_us, wakeups;

static long ts_us(const struct timespec *t)
{
	return t->tv_sec * 1000000L + t->tv_nsec / 1000;
}

/* Wake at every PERIOD_US on the absolute clock; bin how late. */
static void *probe(void *arg)
{
	struct timespec next, now;
	long late;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (probing) {
		next.tv_nsec += PERIOD_US * 1000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		late = ts_us(&now) - ts_us(&next);
		if (late < 0)
			late = 0;
		if (late > worst_us)
			worst_us = late;
		hist[late < HIST_US ? late : HIST_US - 1]++;
		wakeups++;
		/* Overran a period (or more): start again from now. */
		if (late >= PERIOD_US)
			next = now;
	}
	return NULL;
}

/* Start the probe on PROBE_CPU at SCHED_FIFO 80; 0 or an error number. */
static int probe_start(pthread_t *th)
{
	memset(hist, 0, sizeof(hist));
	worst_us = 0;
	wakeups = 0;
	probing = 1;
	return fifo_thread_start(th, PROBE_CPU, 80, probe);
}

/* Stop the probe, print the phase's line, check the bound. */
static void probe_stop(pthread_t th, const char *phase)
{
	long seen = 0, p999 = 0;

	probing = 0;
	pthread_join(th, NULL);
	for (long us = 0; us < HIST_US; us++) {
		seen += hist[us];
		if (seen * 1000 >= wakeups * 999) {
			p999 = us;
			break;
		}
	}
	ktap_diag("rtlat %s: worst %ld us, p99.9 %ld us, %ld wake-ups", phase,
		  worst_us, p999, wakeups);
	CHECK(wakeups > 0, "no wake-up");
	CHECK(worst_us <= LATE_MAX_US, "%s: woken %ld us late (bound %d)",
	      phase, worst_us, LATE_MAX_US);
}

static void test_idle(void)
{
	pthread_t th;

	if (CHECK(probe_start(&th) == 0, "probe")) {
		usleep(IDLE_MS * 1000);
		probe_stop(th, "idle");
	}
	ktap_result(checks_passed(), "rtlat_idle");
}

static bool child_merged(void *arg)
{
	return ksm_stat(*(pid_t *)arg, "ksm_merging_pages") == MERGE_PAGES;
}

/* The child's merge, with the probe on; the child's pid, or 0. */
static pid_t rtlat_merge(void)
{
	pthread_t th;
	pid_t pid = 0;

	CHECK(ksm_reset() == 0, "reset");
	if (CHECK(probe_start(&th) == 0, "probe")) {
		pid = pairs_child_start(MERGE_PAGES, SEED);
		if (CHECK(pid > 0, "child"))
			CHECK(ksm_wait_until(child_merged, &pid, 12),
			      "merged %ld of %d",
			      ksm_stat(pid, "ksm_merging_pages"), MERGE_PAGES);
		probe_stop(th, "merge");
	}
	ktap_result(checks_passed(), "rtlat_merge");
	return pid > 0 ? pid : 0;
}

/* run=2 with the probe on; @pid's child is reaped here. */
static void rtlat_unmerge(pid_t pid)
{
	cpu_set_t cpus;
	pthread_t th;

	/* run=2 unmerges in the writer's context: on the probe's CPU too. */
	sched_getaffinity(0, sizeof(cpus), &cpus);
	pin_to_cpu(0, PROBE_CPU);
	if (CHECK(probe_start(&th) == 0, "probe")) {
		CHECK(ksm_write("run", 2) == 0, "run=2");
		probe_stop(th, "unmerge");
	}
	sched_setaffinity(0, sizeof(cpus), &cpus);
	CHECK(ksm_stat(pid, "ksm_merging_pages") == 0,
	      "merging %ld after run=2", ksm_stat(pid, "ksm_merging_pages"));
	CHECK(pairs_child_content_ok(pid), "the child's pages hold their content");
	ksm_write("run", 1);
	ktap_result(checks_passed(), "rtlat_unmerge");
}

static void test_merge_unmerge(void)
{
	pid_t pid = rtlat_merge();

	if (pid)
		rtlat_unmerge(pid);
	else
		ktap_skip_named("rtlat_unmerge", "no merged child");
}

/* The node of the page at @p, or -errno. */
static int node_of(void *p)
{
	int status = -1;

	if (syscall(__NR_move_pages, 0, 1, &p, NULL, &status, 0))
		return -errno;
	return status;
}

static int move_to(void *p, int node)
{
	int status = -1;

	if (syscall(__NR_move_pages, 0, 1, &p, &node, &status,
		    MPOL_MF_MOVE_ALL))
		return -errno;
	return status;
}

/* Every one of the @n pages at @p maps the same frame and holds @seed. */
static bool one_ksm_page(char *p, size_t n)
{
	unsigned long pfn = page_pfn(p);

	for (size_t i = 0; i < n; i++)
		if (page_pfn(p + i * page_size) != pfn ||
		    !holds_pattern(p + i * page_size, SEED + 1, 0))
			return false;
	return pfn != 0;
}

static bool all_sharing(void *arg)
{
	return ksm_read("pages_sharing") == *(long *)arg - 1;
}

static void test_migrate(void)
{
	long want = SHARERS, moved = 0;
	cpu_set_t cpus;
	pthread_t th;
	char *p;
	int node;

	if (access("/sys/devices/system/node/node1", F_OK)) {
		ktap_skip_named("rtlat_migrate", "one NUMA node");
		return;
	}
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("max_page_sharing", SHARERS) == 0,
	      "max_page_sharing=%d", SHARERS);
	p = map_pages(SHARERS);
	for (size_t i = 0; i < SHARERS; i++)
		fill_pattern(p + i * page_size, SEED + 1, 0);
	CHECK(merge_pages(p, SHARERS) == 0, "madvise");
	if (!CHECK(ksm_wait_until(all_sharing, &want, 12),
		   "sharing %ld of %d", ksm_read("pages_sharing"), SHARERS - 1))
		goto out;
	if (!CHECK(one_ksm_page(p, SHARERS), "one KSM page"))
		goto out;
	/* ksmd still: what the probe sees is the migration's. */
	ksm_pause();
	sched_getaffinity(0, sizeof(cpus), &cpus);
	pin_to_cpu(0, PROBE_CPU);
	if (!CHECK(probe_start(&th) == 0, "probe"))
		goto restore;
	node = node_of(p);
	for (int i = 0; i < MOVES && node >= 0; i++) {
		node = !node;
		if (!CHECK(move_to(p, node) == node, "move %d to node %d", i,
			   node))
			break;
		moved++;
	}
	probe_stop(th, "migrate");
	CHECK(moved == MOVES, "moved %ld of %d times", moved, MOVES);
	CHECK(one_ksm_page(p, SHARERS), "one KSM page, content intact");
	CHECK(node_of(p) == node, "on node %d", node);
restore:
	sched_setaffinity(0, sizeof(cpus), &cpus);
	ksm_resume();
out:
	munmap(p, SHARERS * page_size);
	ktap_result(checks_passed(), "rtlat_migrate");
}

/* The phases, in the order main() runs them. */
static const char *const phases[] = { "rtlat_idle", "rtlat_merge",
				      "rtlat_unmerge", "rtlat_migrate" };

int main(void)
{
	cpu_set_t was;
	int n = ARRAY_SIZE(phases);

	ksm_save_settings();
	ktap_plan(n);
	if (ksmd_pin(PROBE_CPU, &was))
		return ktap_skip_all(phases, n, "cannot pin ksmd");
	test_idle();
	test_merge_unmerge();
	test_migrate();
	sched_setaffinity(ksmd_pid(), sizeof(was), &was);
	ksm_reset();
	return ktap_finish();
}
