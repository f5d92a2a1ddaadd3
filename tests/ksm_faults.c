// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_faults.c - KSM when allocations fail.
 *
 * failslab and fail_page_alloc (debugfs) are armed for one task at a time
 * through /proc/PID/make-it-fail, with ignore-gfp-wait and
 * ignore-gfp-highmem off and min-order 0, so that sleeping slab and page
 * allocations of every order fail too:
 *
 *   ksmd_merge:  ksmd while it merges N pairs. Nothing is lost and the
 *                counters stay within the pages.
 *   ksmd_recovers: once the faults stop, every pair merges (ours; stock
 *                can keep pairs on a KSM page no tree knows, skipped).
 *   cow:         a process writing to one page of each merged pair (COW).
 *                The fault is retried (VM_FAULT_OOM out of a user fault
 *                retries, as mainline has it); every write lands.
 *   unmergeable: a process calling MADV_UNMERGEABLE: each failure is
 *                EAGAIN (madvise turns break_ksm's ENOMEM into EAGAIN for
 *                every advice, as mainline does), a retry finishes the
 *                job, content intact.
 *   run2:        a process writing run=2: each failure is ENOMEM, a retry
 *                finishes the job, content intact, nothing shared.
 *   no_leak:     afterwards, with everything unmapped and run=2, the
 *                KSM slab caches (the guest boots with slab_nomerge;
 *                shrunk first, so that per-CPU slabs count right) and the
 *                free pages (buddy and per-CPU lists, /proc/zoneinfo) are
 *                back where they started, and no failed allocation left a
 *                stack in the kernel log (a vmalloc without __GFP_NOWARN
 *                did: the candidate table's).
 *
 * Each test reports how many failures were injected (from the fault
 * attributes' "times" countdown). Skipped without fault injection.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ksmtest.h"

#define DEBUGFS		"/sys/kernel/debug"
#define N		256	/* pairs */
#define TIMES		1000000L
#define RETRIES		10000

static const char *const attrs[] = { "failslab", "fail_page_alloc" };

/* Shared with the children: what their operations met. */
struct outcome {
	long expected, other_errors, retries_left;
	int other_errno;
};

static struct outcome *out;
static char *area;	/* the parent's pairs, then the child's */

static int attr_write(const char *attr, const char *file, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), DEBUGFS "/%s/%s", attr, file);
	return write_file(path, val);
}

static long attr_read(const char *attr, const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), DEBUGFS "/%s/%s", attr, file);
	return read_long(path);
}

static int make_it_fail(pid_t pid, bool on)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/make-it-fail", (int)pid);
	return write_file(path, on ? "1" : "0");
}

/* Arm both attributes at @percent for tasks with make-it-fail set. */
static bool arm(int percent)
{
	char prob[16];
	int err = 0;

	snprintf(prob, sizeof(prob), "%d", percent);
	for (size_t i = 0; i < ARRAY_SIZE(attrs); i++) {
		err |= attr_write(attrs[i], "task-filter", "Y");
		err |= attr_write(attrs[i], "verbose", "0");
		err |= attr_write(attrs[i], "interval", "1");
		err |= attr_write(attrs[i], "ignore-gfp-wait", "N");
		err |= attr_write(attrs[i], "times", "1000000");
		err |= attr_write(attrs[i], "probability", prob);
	}
	err |= attr_write("fail_page_alloc", "ignore-gfp-highmem", "N");
	err |= attr_write("fail_page_alloc", "min-order", "0");
	return !err;
}

/* Disarm; returns the failures injected since arm(). */
static long disarm(void)
{
	long injected = 0;

	for (size_t i = 0; i < ARRAY_SIZE(attrs); i++) {
		attr_write(attrs[i], "probability", "0");
		injected += TIMES - attr_read(attrs[i], "times");
	}
	return injected;
}

static void disarm_all(void)
{
	disarm();
	if (ksmd_pid())
		make_it_fail(ksmd_pid(), false);
}

/* Pair i of @p: pages 2i and 2i + 1, pattern (@seed, i). */
static void fill_pairs(char *p, unsigned int seed)
{
	for (int i = 0; i < N; i++) {
		fill_pattern(p + 2 * i * page_size, seed, i);
		fill_pattern(p + (2 * i + 1) * page_size, seed, i);
	}
}

static int pairs_wrong(const char *p, unsigned int seed)
{
	int bad = 0;

	for (int i = 0; i < N; i++)
		bad += !holds_pattern(p + 2 * i * page_size, seed, i) ||
		       !holds_pattern(p + (2 * i + 1) * page_size, seed, i);
	return bad;
}

/* An error of an operation: @want is the one mainline gives. */
static void note_error(int err, int want)
{
	if (err == want) {
		out->expected++;
	} else {
		out->other_errors++;
		out->other_errno = err;
	}
}

/* The children's side: commands from the parent, one at a time. */
static int kid(void *arg, int i, int cmd_fd, int reply_fd)
{
	unsigned int seed = 0x5a00;
	char cmd;
	int tries;

	(void)arg;
	(void)i;
	while ((cmd = kid_wait_cmd(cmd_fd)) != 'q') {
		bool ok = true;

		switch (cmd) {
		case 'm':	/* map the pairs and make them mergeable */
			area = map_pages(2 * N);
			fill_pairs(area, seed);
			ok = !merge_pages(area, 2 * N);
			break;
		case 'M':
			ok = !merge_pages(area, 2 * N);
			break;
		case 'c':
			ok = !pairs_wrong(area, seed);
			break;
		case 'w':	/* COW: each second page gets other content */
			for (int j = 0; j < N; j++)
				fill_pattern(area + (2 * j + 1) * page_size,
					     seed + 1, j);
			for (int j = 0; j < N; j++)
				ok &= holds_pattern(area + 2 * j * page_size,
						    seed, j) &&
				      holds_pattern(area + (2 * j + 1) *
						    page_size, seed + 1, j);
			break;
		case 'r':	/* the pairs again */
			fill_pairs(area, seed);
			break;
		case 'u':	/* MADV_UNMERGEABLE until it succeeds */
			for (tries = 0; tries < RETRIES; tries++) {
				if (!madvise(area, 2 * N * page_size,
					     MADV_UNMERGEABLE))
					break;
				note_error(errno, EAGAIN);
			}
			out->retries_left = RETRIES - tries;
			ok = tries < RETRIES && !pairs_wrong(area, seed);
			break;
		case '2':	/* run=2 until it succeeds */
			for (tries = 0; tries < RETRIES; tries++) {
				int err = ksm_write("run", 2);

				if (!err)
					break;
				note_error(-err, ENOMEM);
			}
			out->retries_left = RETRIES - tries;
			ok = tries < RETRIES;
			break;
		default:
			ok = false;
		}
		kid_reply(reply_fd, ok ? 'o' : 'x');
	}
	return 0;
}

/* Run child command @cmd with the child's allocations failing. */
static bool kid_call_failing(struct kids *k, char cmd, long *injected)
{
	char reply = 0;

	memset(out, 0, sizeof(*out));
	if (!CHECK(arm(20) && make_it_fail(k->pid[0], true) == 0, "arm"))
		return false;
	CHECK(kid_call(k, 0, cmd, &reply), "child answers");
	make_it_fail(k->pid[0], false);
	*injected = disarm();
	return reply == 'o';
}

static void test_ksmd_merge(const char *name, const char *name2)
{
	long injected, shared;
	struct ksm_counts c;

	CHECK(ksm_reset() == 0, "reset");
	fill_pairs(area, 0x5a00);
	CHECK(merge_pages(area, 2 * N) == 0, "madvise");
	CHECK(arm(20) && make_it_fail(ksmd_pid(), true) == 0, "arm ksmd");
	CHECK(ksm_wait_scans(6), "ksmd scans while failing");
	shared = ksm_read("pages_shared");
	make_it_fail(ksmd_pid(), false);
	injected = disarm();
	ktap_diag("%ld failures injected into ksmd, %ld of %d pairs merged",
		  injected, shared, N);
	CHECK(injected > 0, "failures injected");
	CHECK(!pairs_wrong(area, 0x5a00), "content under failures");
	CHECK(ksm_wait_scans(4), "ksmd scans after");
	/*
	 * A snapshot with ksmd paused: while it runs, mainline's page under
	 * a visit has left its tree and counts as volatile, one too many.
	 */
	CHECK(ksm_pause() == 0, "run=0");
	ksm_get_counts(&c);
	CHECK(ksm_resume() == 0, "run=1");
	ktap_diag("after: shared %ld sharing %ld unshared %ld volatile %ld",
		  c.shared, c.sharing, c.unshared, c.volatile_);
	CHECK(c.shared <= N && c.sharing <= N &&
	      c.shared + c.sharing + c.unshared + c.volatile_ <= 2 * N,
	      "counters within the pages");
	CHECK(!pairs_wrong(area, 0x5a00), "content");
	ktap_result(checks_passed(), "%s", name);

	/*
	 * Stock 6.12 can leave pairs behind for good: when the stable node
	 * of a fresh merge cannot be allocated and break_cow() cannot copy
	 * either, the pair stays on a KSM page that no tree knows.
	 */
	if (ksm_read("max_kernel_pages") < 0) {
		ktap_skip_named(name2, "stock keeps pairs a failure left");
		return;
	}
	CHECK(ksm_wait_counts(N, N, 0, 0), "every pair merges");
	CHECK(!pairs_wrong(area, 0x5a00), "content");
	ktap_result(checks_passed(), "%s", name2);
}

/* Does the child still hold its pairs' content? */
static bool kid_content(struct kids *k)
{
	char reply = 0;

	return kid_call(k, 0, 'c', &reply) && reply == 'o';
}

static void test_cow(const char *name, struct kids *k)
{
	char reply = 0;
	long injected;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(kid_call(k, 0, 'm', &reply) && reply == 'o', "child's pairs");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merged");
	CHECK(kid_call_failing(k, 'w', &injected), "every write lands");
	ktap_diag("%ld failures injected into the writer", injected);
	CHECK(injected > 0, "failures injected");
	CHECK(ksm_wait_counts(N, 0, KSM_ANY, KSM_ANY),
	      "N KSM pages, one mapping each");
	CHECK(kid_call(k, 0, 'r', &reply) && reply == 'o', "pairs again");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merged again");
	CHECK(kid_content(k), "content");
	ktap_result(checks_passed(), "%s", name);
}

static void test_unmergeable(const char *name, struct kids *k)
{
	long injected;

	CHECK(kid_call_failing(k, 'u', &injected), "unmerged, content intact");
	ktap_diag("%ld failures injected, %ld EAGAIN, %ld other errors (%s)",
		  injected, out->expected, out->other_errors,
		  strerror(out->other_errno));
	CHECK(!out->other_errors, "every failure is EAGAIN");
	CHECK(ksm_wait_counts(0, 0, KSM_ANY, KSM_ANY), "nothing shared");
	CHECK(kid_content(k), "content");
	ktap_result(checks_passed(), "%s", name);
}

static void test_run2(const char *name, struct kids *k)
{
	char reply = 0;
	long injected;

	CHECK(kid_call(k, 0, 'M', &reply) && reply == 'o', "madvise");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merged");
	CHECK(kid_call_failing(k, '2', &injected), "run=2 done");
	ktap_diag("%ld failures injected, %ld ENOMEM, %ld other errors (%s)",
		  injected, out->expected, out->other_errors,
		  strerror(out->other_errno));
	CHECK(!out->other_errors, "every failure is ENOMEM");
	CHECK(ksm_read("pages_shared") == 0 && ksm_read("pages_sharing") == 0,
	      "nothing shared");
	CHECK(kid_content(k), "content");
	CHECK(ksm_reset() == 0, "run=1");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merges again");
	CHECK(kid_content(k), "content");
	ktap_result(checks_passed(), "%s", name);
}

/*
 * Objects in use in the KSM slab caches (ours and mainline's names),
 * after shrinking them: a shrink flushes the per-CPU slabs, whose free
 * objects /proc/slabinfo would count as in use.
 */
static long ksm_slab_objects(void)
{
	FILE *f = fopen("/proc/slabinfo", "r");
	char line[512], cache[64], path[128];
	long total = 0, active;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", cache, &active) == 2 &&
		    (!strncmp(cache, "sp_", 3) || !strncmp(cache, "ksm_", 4))) {
			snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink",
				 cache);
			write_file(path, "1");
		}
	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", cache, &active) == 2 &&
		    (!strncmp(cache, "sp_", 3) || !strncmp(cache, "ksm_", 4)))
			total += active;
	fclose(f);
	return total;
}

/* Free pages: in the buddy lists and on the per-CPU lists. */
static long free_pages(void)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	char line[256];
	long total = 0, n;

	if (!f)
		return -1;
	write_file("/proc/sys/vm/drop_caches", "3");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " pages free %ld", &n) == 1 ||
		    sscanf(line, " count: %ld", &n) == 1)
			total += n;
	fclose(f);
	return total;
}

static void test_no_leak(const char *name, long slab0, long free0,
			 int splats0)
{
	long slab, nfree;

	CHECK(ksm_write("run", 2) == 0, "run=2");
	slab = ksm_slab_objects();
	nfree = free_pages();
	ktap_diag("KSM slab objects %ld, at start %ld; free pages %ld, at start %ld",
		  slab, slab0, nfree, free0);
	CHECK(slab <= slab0, "KSM slab objects back");
	/*
	 * N KSM pages held on would show: the slack is a quarter of them.
	 * Under slab debugging (make test DEBUG=kasan) KASAN's quarantine
	 * holds freed objects, and their slabs' pages, by the thousand: free
	 * pages measure nothing there, and the normal kernel's run checks.
	 */
	if (slab_padding() > 1.5)
		ktap_diag("slab debugging: free pages not compared");
	else
		CHECK(nfree >= free0 - N / 4, "free pages back");
	/* A failed allocation is handled, not reported with a stack. */
	CHECK(kernel_splats() == splats0, "%d new splats in the log",
	      kernel_splats() - splats0);
	ktap_result(checks_passed(), "%s", name);
}

int main(void)
{
	static const char *const names[] = {
		"faults_ksmd_merge", "faults_ksmd_recovers", "faults_cow",
		"faults_unmergeable",
		"faults_run2", "faults_no_leak",
	};
	struct stat st;
	struct kids k;
	long slab0, free0;
	int splats0;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (stat(DEBUGFS "/failslab", &st))
		mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	if (stat(DEBUGFS "/failslab", &st) ||
	    stat(DEBUGFS "/fail_page_alloc", &st) || !ksmd_pid())
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no fault injection");
	atexit(disarm_all);
	/* This process's own registration belongs to the baseline. */
	area = map_pages(1);
	merge_pages(area, 1);
	munmap(area, page_size);
	ksm_write("run", 2);
	slab0 = ksm_slab_objects();
	free0 = free_pages();
	splats0 = kernel_splats();

	out = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	/* The child forks before the parent maps its pairs: none shared. */
	if (out == MAP_FAILED || kids_start(&k, 1, kid, NULL))
		return ktap_skip_all(names, ARRAY_SIZE(names), "setup failed");
	area = map_pages(2 * N);
	test_ksmd_merge(names[0], names[1]);
	munmap(area, 2 * N * page_size);
	test_cow(names[2], &k);
	test_unmergeable(names[3], &k);
	test_run2(names[4], &k);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "child exits");
	test_no_leak(names[5], slab0, free0, splats0);
	return ktap_finish();
}
