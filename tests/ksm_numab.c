// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_numab.c - merging under automatic NUMA balancing, as Debian's kernels
 * run with kernel.numa_balancing=1 by default: every scan period,
 * task_numa_work() turns the PTEs of a task's memory PROT_NONE, and its
 * next touch takes a hinting fault, which may migrate the page to the
 * toucher's node. Here a process with a thread on each node keeps reading
 * mergeable pages, and checking what it reads, while ksmd merges them.
 *
 * - numab_merge_survives: merge_across_nodes=1. All pages are first
 *   touched on node 0; the thread on node 1 reads the second half, which
 *   NUMA balancing moves to it, taking hinting faults from before the
 *   pages are made mergeable. Page i and page N + i are equal: all N pairs must merge,
 *   and stay merged, every read right and the counters as mainline keeps
 *   them.
 * - numab_within_node: merge_across_nodes=0. Two copies of one content are
 *   bound to node 0 (MPOL_BIND: hinting faults, no migration) and two
 *   to node 1, and both threads read all of them, taking hinting faults
 *   before they are made mergeable: each node must get a KSM page of its
 *   own, and no KSM page may map the pages of both.
 *
 * Scan delays are shortened through debugfs for the run, and restored.
 * Skipped without CONFIG_NUMA_BALANCING or without a CPU on each of two
 * nodes.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define N		128	/* pages in each copy */
#define SEED		0x4e80
#define NUMAB		"/proc/sys/kernel/numa_balancing"
#define DEBUGFS		"/sys/kernel/debug"
#define SCHED_NUMAB	DEBUGFS "/sched/numa_balancing/"
#define MPOL_BIND	2
#define MPOL_F_NUMA_BALANCING	(1 << 13)
#define MPOL_MF_STRICT	(1 << 0)
#define HINT_WAIT_S	60

/* task_numa_work()'s pacing, made quick for the run and then restored. */
static const struct {
	const char *name;
	const char *value;
} pacing[] = {
	{ "scan_delay_ms", "10" },
	{ "scan_period_min_ms", "10" },
	{ "scan_period_max_ms", "100" },
};
static char saved_pacing[ARRAY_SIZE(pacing)][32];
static char saved_numab[16];

/* A reader: a thread on @cpu reading @n pages from @first, over and over. */
struct reader {
	pthread_t thread;
	int cpu;
	char *base;
	size_t first, n;
	unsigned int seed;	/* page i holds pattern (seed, i % N) */
	atomic_long sweeps, wrong;
};

static atomic_bool stop;

/* Every copy of N pages holds the same patterns: page i is (@seed, i % N). */
static void fill(char *p, size_t pages, unsigned int seed)
{
	for (size_t i = 0; i < pages; i++)
		fill_pattern(p + i * page_size, seed, i % N);
}

static bool holds(const char *p, size_t i, unsigned int seed)
{
	return holds_pattern(p + i * page_size, seed, i % N);
}

static size_t wrong(const char *p, size_t pages, unsigned int seed)
{
	size_t bad = 0;

	for (size_t i = 0; i < pages; i++)
		bad += !holds(p, i, seed);
	return bad;
}

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		atomic_fetch_add(&r->wrong, 1000000);
	while (!atomic_load(&stop)) {
		for (size_t i = r->first; i < r->first + r->n; i++)
			if (!holds(r->base, i, r->seed))
				atomic_fetch_add(&r->wrong, 1);
		atomic_fetch_add(&r->sweeps, 1);
		usleep(2000);	/* leave ksmd its share of the CPU */
	}
	return NULL;
}

static bool readers_start(struct reader *r, int n)
{
	atomic_store(&stop, false);
	for (int i = 0; i < n; i++)
		if (pthread_create(&r[i].thread, NULL, read_loop, &r[i]))
			return false;
	return true;
}

static long readers_stop(struct reader *r, int n)
{
	long wrong = 0;

	atomic_store(&stop, true);
	for (int i = 0; i < n; i++) {
		pthread_join(r[i].thread, NULL);
		ktap_diag("reader on cpu %d: %ld sweeps, %ld wrong", r[i].cpu,
			  atomic_load(&r[i].sweeps), atomic_load(&r[i].wrong));
		wrong += atomic_load(&r[i].wrong);
	}
	return wrong;
}

/* The first CPU of NUMA node @node, or -1. */
static int node_cpu(int node)
{
	char path[64], buf[64];
	int cpu;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist",
		 node);
	if (read_file(path, buf, sizeof(buf)) || sscanf(buf, "%d", &cpu) != 1)
		return -1;
	return cpu;
}

static int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* The node of the page at @p, or -errno (move_pages(2) as a query). */
static int node_of(const char *p)
{
	void *pages[1] = { (void *)p };
	int status = -1;

	if (syscall(__NR_move_pages, 0, 1, pages, NULL, &status, 0))
		return -errno;
	return status;
}

/*
 * Bind @n pages at @p to @node, before they are touched. With
 * MPOL_F_NUMA_BALANCING the VMA is still scanned for hinting faults, but
 * its pages move only within the nodes bound: here, not at all.
 */
static int bind_to(char *p, size_t n, int node)
{
	unsigned long mask = 1UL << node;

	return syscall(__NR_mbind, p, n * page_size,
		       MPOL_BIND | MPOL_F_NUMA_BALANCING, &mask,
		       sizeof(mask) * 8, MPOL_MF_STRICT) ? -errno : 0;
}

static bool numab_setup(void)
{
	if (read_file(NUMAB, saved_numab, sizeof(saved_numab)))
		return false;
	if (access(SCHED_NUMAB, F_OK))
		mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(pacing); i++) {
		char path[128];

		snprintf(path, sizeof(path), SCHED_NUMAB "%s", pacing[i].name);
		if (!read_file(path, saved_pacing[i], sizeof(saved_pacing[i])))
			write_file(path, pacing[i].value);
	}
	return write_file(NUMAB, "1") == 0;
}

static void numab_restore(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(pacing); i++) {
		char path[128];

		snprintf(path, sizeof(path), SCHED_NUMAB "%s", pacing[i].name);
		if (saved_pacing[i][0])
			write_file(path, saved_pacing[i]);
	}
	if (saved_numab[0])
		write_file(NUMAB, saved_numab);
}

/*
 * Wait, up to HINT_WAIT_S, for vmstat counter @name to pass @from: a
 * task's first scan comes a scan delay after its mm was made, and then
 * only as its threads run. True once it did.
 */
static bool wait_vmstat(const char *name, long from)
{
	double deadline = monotonic_seconds() + HINT_WAIT_S;

	while (vmstat(name) <= from) {
		if (monotonic_seconds() > deadline)
			return false;
		usleep(10000);
	}
	return true;
}

static size_t pairs_apart(const char *p)
{
	size_t apart = 0;

	for (size_t i = 0; i < N; i++)
		apart += !page_pfn(p + i * page_size) ||
			 page_pfn(p + i * page_size) !=
			 page_pfn(p + (N + i) * page_size);
	return apart;
}

static void test_merge_survives(int cpu0, int cpu1)
{
	struct reader r[2] = {
		{ .cpu = cpu0, .first = 0, .n = N, .seed = SEED },
		{ .cpu = cpu1, .first = N, .n = N, .seed = SEED },
	};
	long faults, migrated, moved = 0;
	char *p;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(pin_self(cpu0) == 0, "pin to cpu %d", cpu0);
	p = map_pages(2 * N);
	fill(p, 2 * N, SEED);
	r[0].base = r[1].base = p;
	faults = vmstat("numa_hint_faults");
	migrated = vmstat("numa_pages_migrated");
	/* NUMA balancing at work first, then ksmd beside it. */
	CHECK(readers_start(r, 2), "threads");
	CHECK(wait_vmstat("numa_hint_faults", faults),
	      "no hinting fault in %d s", HINT_WAIT_S);
	CHECK(merge_pages(p, 2 * N) == 0, "madvise");
	CHECK(ksm_wait_counter("pages_sharing", N), "all pairs merged");
	/* Then some scans more with the readers on: they must stay so. */
	CHECK(ksm_wait_scans(3), "scans");
	CHECK(readers_stop(r, 2) == 0, "every read right");
	for (size_t i = N; i < 2 * N; i++)
		moved += node_of(p + i * page_size) == 1;
	ktap_diag("numa_hint_faults +%ld, numa_pages_migrated +%ld, %ld of the "
		  "second half on node 1", vmstat("numa_hint_faults") - faults,
		  vmstat("numa_pages_migrated") - migrated, moved);
	CHECK(pairs_apart(p) == 0, "%zu pairs apart", pairs_apart(p));
	CHECK(ksm_wait_counts(N, N, 0, 0), "counters");
	CHECK(self_merging_pages() == 2 * N, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(wrong(p, 2 * N, SEED) == 0, "content");
	munmap(p, 2 * N * page_size);
	ktap_result(checks_passed(), "numab_merge_survives");
}

static void test_within_node(int cpu0, int cpu1)
{
	struct reader r[2] = {
		{ .cpu = cpu0, .first = 0, .n = 4 * N, .seed = SEED + 1 },
		{ .cpu = cpu1, .first = 0, .n = 4 * N, .seed = SEED + 1 },
	};
	size_t mixed = 0, apart = 0, astray = 0;
	long faults;
	char *p;

	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_write("merge_across_nodes", 0) == 0, "merge_across_nodes=0");
	p = map_unfaulted(4 * N);
	for (int c = 0; c < 4; c++)
		CHECK(bind_to(p + c * N * page_size, N, c % 2) == 0,
		      "mbind copy %d: %s", c, strerror(errno));
	/* Copies 0 and 2 on node 0, 1 and 3 on node 1: one content. */
	fill(p, 4 * N, SEED + 1);
	r[0].base = r[1].base = p;
	faults = vmstat("numa_hint_faults");
	CHECK(readers_start(r, 2), "threads");
	CHECK(wait_vmstat("numa_hint_faults", faults),
	      "no hinting fault in %d s", HINT_WAIT_S);
	CHECK(merge_pages(p, 4 * N) == 0, "madvise");
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_counter("pages_sharing", 2 * N), "merged");
	CHECK(ksm_wait_scans(3), "scans");
	CHECK(readers_stop(r, 2) == 0, "every read right");
	ktap_diag("numa_hint_faults +%ld", vmstat("numa_hint_faults") - faults);
	for (size_t i = 0; i < N; i++) {
		unsigned long f[4];

		for (int c = 0; c < 4; c++)
			f[c] = page_pfn(p + (c * N + i) * page_size);
		apart += f[0] != f[2] || f[1] != f[3];
		mixed += f[0] == f[1];
		for (int c = 0; c < 4; c++)
			astray += node_of(p + (c * N + i) * page_size) != c % 2;
	}
	CHECK(apart == 0, "%zu contents not merged on a node", apart);
	CHECK(mixed == 0, "%zu KSM pages merged across nodes", mixed);
	CHECK(astray == 0, "%zu pages off their node", astray);
	CHECK(ksm_wait_counts(2 * N, 2 * N, 0, 0), "counters");
	CHECK(wrong(p, 4 * N, SEED + 1) == 0, "content");
	munmap(p, 4 * N * page_size);
	CHECK(ksm_write("run", 2) == 0, "run=2");
	ktap_result(checks_passed(), "numab_within_node");
}

int main(void)
{
	static const char *const names[] = {
		"numab_merge_survives", "numab_within_node",
	};
	int cpu0 = node_cpu(0), cpu1 = node_cpu(1), status;
	pid_t pid;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (access(NUMAB, F_OK))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no CONFIG_NUMA_BALANCING");
	if (cpu0 < 0 || cpu1 < 0 || cpu0 == cpu1)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "needs a CPU on each of two NUMA nodes");
	if (!numab_setup()) {
		ktap_diag("could not set kernel.numa_balancing=1");
		return 1;
	}
	/*
	 * The tests run in a child forked here. An exec'd mm has no next
	 * scan time until its first tick sets one, and until then the tick
	 * takes it for one in the future while jiffies are below zero: for
	 * the first five minutes of uptime. fork() sets it from the delay.
	 */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		test_merge_survives(cpu0, cpu1);
		test_within_node(cpu0, cpu1);
		_exit(ktap_finish());
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		status = 1 << 8;
	numab_restore();
	ksm_reset();
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
