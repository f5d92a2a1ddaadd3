// SPDX-License-Identifier: GPL-2.0
/*
 * ksmtest.c - helpers shared by the samepage guest tests.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "ksmtest.h"

size_t page_size = 4096;

static int ktap_done, ktap_failed;
static bool check_failed;

__attribute__((constructor)) static void ksmtest_init(void)
{
	page_size = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A child that died must fail a check, not kill its parent. */
	signal(SIGPIPE, SIG_IGN);
}

void ktap_plan(int tests)
{
	printf("KTAP version 1\n1..%d\n", tests);
}

static void ktap_line(const char *status, const char *fmt, va_list ap)
{
	printf("%s %d ", status, ++ktap_done);
	vprintf(fmt, ap);
	printf("\n");
}

void ktap_result(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ktap_line(ok ? "ok" : "not ok", fmt, ap);
	va_end(ap);
	if (!ok)
		ktap_failed++;
}

void ktap_skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok %d # SKIP ", ++ktap_done);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

void ktap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

int ktap_finish(void)
{
	ktap_diag("%d tests, %d failed", ktap_done, ktap_failed);
	return ktap_failed ? 1 : 0;
}

bool check_(bool cond, const char *expr, const char *file, int line,
	    const char *fmt, ...)
{
	va_list ap;

	if (cond)
		return true;
	check_failed = true;
	printf("# %s:%d: check failed: %s: ", file, line, expr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return false;
}

bool checks_passed_so_far(void)
{
	return !check_failed;
}

bool checks_passed(void)
{
	bool ok = !check_failed;

	check_failed = false;
	return ok;
}

long read_long(const char *path)
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

int read_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	buf[0] = '\0';
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

/* One write(2) of @len bytes to @path: what it returned, or -errno. */
static long write_once(const char *path, const char *buf, size_t len,
		       int flags)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | flags);
	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

static int write_file_flags(const char *path, const char *s, int flags)
{
	long n = write_once(path, s, strlen(s), flags);

	if (n < 0)
		return n;
	return n == (long)strlen(s) ? 0 : -EIO;
}

int write_file(const char *path, const char *s)
{
	return write_file_flags(path, s, 0);
}

int write_file_trunc(const char *path, const char *s)
{
	return write_file_flags(path, s, O_TRUNC);
}

long ksm_read(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), KSM_DIR "%s", name);
	return read_long(path);
}

long ksm_write_raw(const char *name, const char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), KSM_DIR "%s", name);
	return write_once(path, buf, len, 0);
}

int ksm_write_str(const char *name, const char *value)
{
	long n = ksm_write_raw(name, value, strlen(value));

	return n < 0 ? n : 0;
}

int ksm_read_str(const char *name, char *buf, size_t size)
{
	char path[128];

	snprintf(path, sizeof(path), KSM_DIR "%s", name);
	return read_file(path, buf, size);
}

int ksm_write(const char *name, long value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", value);
	return ksm_write_str(name, buf);
}

/*
 * The writable settings, in an order that restores cleanly: advisor_mode
 * resets pages_to_scan, merge_across_nodes, max_page_sharing and
 * merge_domain need no KSM pages (run=2 first), run comes last.
 */
static const char *const settings[] = {
	"advisor_mode", "advisor_max_cpu", "advisor_min_pages_to_scan",
	"advisor_max_pages_to_scan", "advisor_target_scan_time",
	"merge_across_nodes", "max_page_sharing", "merge_domain",
	"hide_merges",
	"use_fresh_pages", "protect_after_scans", "thp_split_min",
	"use_zero_pages", "zero_pages_only", "estimate", "pressure_only",
	"merge_all",
	"smart_scan", "stable_node_chains_prune_millisecs",
	"sleep_millisecs", "pages_to_scan", "run",
};
#define NR_SETTINGS ARRAY_SIZE(settings)
static char saved[NR_SETTINGS][64];
static pid_t saved_by;

static void restore_settings(void)
{
	char mode[64];

	if (getpid() != saved_by)
		return;
	ksm_write("run", 2);
	for (size_t i = 0; i < NR_SETTINGS; i++) {
		if (!saved[i][0])
			continue;
		if (strchr(saved[i], '[')) {
			/* Shown as "[none] scan-time": write the bracketed one. */
			if (sscanf(strchr(saved[i], '['), "[%63[^]]", mode) == 1)
				ksm_write_str(settings[i], mode);
			continue;
		}
		if (!strcmp(settings[i], "pages_to_scan") &&
		    strncmp(saved[0], "[none]", 6))
			continue;	/* the advisor owns it */
		ksm_write_str(settings[i], saved[i]);
	}
}

void ksm_save_settings(void)
{
	for (size_t i = 0; i < NR_SETTINGS; i++)
		if (ksm_read_str(settings[i], saved[i], sizeof(saved[i])))
			saved[i][0] = '\0';
	if (!saved_by) {
		saved_by = getpid();
		atexit(restore_settings);
	}
}

/*
 * Settings that make scans quick and their count predictable, in the order
 * written; an optional one may be absent: advisor_mode from older kernels,
 * samepage's own from stock.
 */
static const struct {
	const char *name, *value;
	bool optional;
} fast_settings[] = {
	/* First: leaving the advisor resets pages_to_scan. */
	{ "advisor_mode", "none", true },
	{ "smart_scan", "0", false },
	{ "use_zero_pages", "0", false },
	{ "merge_across_nodes", "1", false },
	{ "max_page_sharing", "256", false },
	/* samepage's merge domains and fresh pages: off, as in mainline. */
	{ "merge_domain", "system", true },
	/* samepage's merging that no process can observe: off. */
	{ "hide_merges", "0", true },
	{ "use_fresh_pages", "0", true },
	/* samepage's write protection of pages that hold still: default. */
	{ "protect_after_scans", "2", true },
	/* samepage's huge pages split only when it pays: default. */
	{ "thp_split_min", "64", true },
	/* samepage's host-wide opt-in: off, as in mainline. */
	{ "merge_all", "0", true },
	/* samepage's zero-pages-only mode: off, as in mainline. */
	{ "zero_pages_only", "0", true },
	/* samepage's estimate mode (count, merge nothing): off. */
	{ "estimate", "0", true },
	/* samepage's pressure mode (scan only mms short of memory): off. */
	{ "pressure_only", "0", true },
	{ "sleep_millisecs", "0", false },
	{ "pages_to_scan", "1000", false },
};

int ksm_reset_settings(void)
{
	int err = 0;

	for (size_t i = 0; i < ARRAY_SIZE(fast_settings); i++) {
		int e = ksm_write_str(fast_settings[i].name,
				      fast_settings[i].value);

		if (e && !err && !fast_settings[i].optional)
			err = e;
	}
	return err;
}

int ksm_reset(void)
{
	int err;

	err = ksm_write("run", 2);
	if (err)
		return err;
	/* Unchecked: merge_across_nodes, for one, needs CONFIG_NUMA. */
	ksm_reset_settings();
	return ksm_write("run", 1);
}

double monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

unsigned long long cycle_count(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return (unsigned long long)(monotonic_seconds() * 1e9);
#endif
}

bool ksm_wait_scans_until(long target, double seconds)
{
	double deadline = monotonic_seconds() + seconds;

	while (ksm_read("full_scans") < target) {
		if (monotonic_seconds() > deadline)
			return false;
		usleep(10000);
	}
	return true;
}

bool ksm_wait_scans(int scans)
{
	long target = ksm_read("full_scans") + scans;

	if (target < scans)
		return false;	/* no KSM */
	if (ksm_wait_scans_until(target, KSM_WAIT_SECONDS))
		return true;
	ktap_diag("timed out waiting for %d full scans", scans);
	return false;
}

bool ksm_wait_counter(const char *name, long value)
{
	long start = ksm_read("full_scans");
	double deadline = monotonic_seconds() + KSM_WAIT_SECONDS;

	/* Bounded in full scans too: a value not reached in 20 never will. */
	while (ksm_read(name) != value) {
		if (start < 0 || monotonic_seconds() > deadline ||
		    ksm_read("full_scans") > start + 20) {
			ktap_diag("%s is %ld, want %ld", name, ksm_read(name),
				  value);
			return false;
		}
		usleep(10000);
	}
	return true;
}

int ksm_pause(void)
{
	/* run_store() takes ksm_thread_mutex, which ksmd holds per batch. */
	return ksm_write("run", 0);
}

int ksm_resume(void)
{
	return ksm_write("run", 1);
}

int ksm_idle(void)
{
	int err = ksm_pause();

	/* A batch of no page every 0 ms would keep a CPU busy. */
	if (!err)
		err = ksm_write("pages_to_scan", 0);
	if (!err)
		err = ksm_write("sleep_millisecs", 1000);
	return err ? err : ksm_resume();
}

void ksm_get_counts(struct ksm_counts *c)
{
	c->shared = ksm_read("pages_shared");
	c->sharing = ksm_read("pages_sharing");
	c->unshared = ksm_read("pages_unshared");
	c->volatile_ = ksm_read("pages_volatile");
	c->full_scans = ksm_read("full_scans");
}

static bool counts_are(const struct ksm_counts *c, long shared, long sharing,
		       long unshared, long volatile_)
{
	return (shared == KSM_ANY || c->shared == shared) &&
	       (sharing == KSM_ANY || c->sharing == sharing) &&
	       (unshared == KSM_ANY || c->unshared == unshared) &&
	       (volatile_ == KSM_ANY || c->volatile_ == volatile_);
}

bool ksm_wait_counts(long shared, long sharing, long unshared, long volatile_)
{
	double deadline = monotonic_seconds() + KSM_WAIT_SECONDS;
	struct ksm_counts c;
	long start = ksm_read("full_scans");

	/*
	 * Only a snapshot taken with ksmd paused will do: while it runs, a
	 * page it is looking at has left its tree and not yet gone back, so
	 * pages_unshared and pages_volatile are often one off.
	 */
	while (start >= 0 && !ksm_pause()) {
		ksm_get_counts(&c);
		ksm_resume();
		if (counts_are(&c, shared, sharing, unshared, volatile_))
			return true;
		/* Bounded in full scans too: a state not reached in 20 never will. */
		if (monotonic_seconds() > deadline ||
		    c.full_scans > start + 20) {
			ksm_diag_rmap_items();
			ktap_diag("shared %ld sharing %ld unshared %ld volatile %ld after %ld scans, want %ld %ld %ld %ld",
				  c.shared, c.sharing, c.unshared, c.volatile_,
				  c.full_scans - start, shared, sharing,
				  unshared, volatile_);
			return false;
		}
		usleep(10000);
	}
	ktap_diag("no KSM to wait on");
	return false;
}

void ksm_diag_rmap_items(void)
{
	char path[300], line[128];
	struct dirent *d;
	DIR *dir;
	FILE *f;

	dir = opendir("/proc");
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ksm_stat", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "ksm_rmap_items ", 15) &&
			    strcmp(line + 15, "0\n"))
				ktap_diag("pid %s%s: %.*s", d->d_name,
					  atoi(d->d_name) == getpid() ?
					  " (self)" : "",
					  (int)strlen(line) - 1, line);
		fclose(f);
	}
	closedir(dir);
}

/* ksmd sleeps this long between batches in step mode: only kicks wake it. */
#define KSM_STEP_SLEEP 3600000

pid_t ksmd_pid(void)
{
	static pid_t pid;
	struct dirent *d;
	char path[300], comm[32];
	DIR *dir;

	if (pid)
		return pid;
	dir = opendir("/proc");
	if (!dir)
		return 0;
	while (!pid && (d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "ksmd\n"))
			pid = atoi(d->d_name);
		fclose(f);
	}
	closedir(dir);
	return pid;
}

/* ksmd's state letter from /proc/PID/stat, or '?'. */
static char ksmd_state(void)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", ksmd_pid());
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

int ksm_step_mode(void)
{
	int err;

	if (!ksmd_pid())
		return -ESRCH;
	err = ksm_pause();
	if (!err)
		err = ksm_write("sleep_millisecs", KSM_STEP_SLEEP);
	return err;
}

static void ksm_kick(void)
{
	long sleep_ms = ksm_read("sleep_millisecs");

	/*
	 * A new sleep_millisecs first, then run=1: whichever wakes ksmd, it
	 * reads the new sleep_millisecs after its batch, so the other cannot
	 * wake it for a second one.
	 */
	ksm_write("sleep_millisecs", sleep_ms == KSM_STEP_SLEEP ?
		  KSM_STEP_SLEEP + 1 : KSM_STEP_SLEEP);
	ksm_resume();
}

/*
 * Wait until ksmd is in one of its two interruptible waits (run=0, or
 * between batches) with @counter unchanged since, not between a batch and
 * a wait, where a kick would be lost. Returns the counter's value then.
 */
static long ksm_wait_idle(const char *counter, double deadline)
{
	long before = ksm_read(counter);

	for (;;) {
		if (ksmd_state() == 'S') {
			usleep(1000);
			if (ksmd_state() == 'S' && ksm_read(counter) == before)
				return before;
		}
		if (monotonic_seconds() > deadline) {
			ktap_diag("ksmd never went idle");
			return -1;
		}
		usleep(1000);
		before = ksm_read(counter);
	}
}

/* Kick ksmd and wait until @counter moves from @before. */
static bool ksm_kick_until(const char *counter, long before, double deadline)
{
	double rekick;

	ksm_kick();
	rekick = monotonic_seconds() + 3;
	while (ksm_read(counter) == before) {
		if (monotonic_seconds() > deadline) {
			ktap_diag("ksmd did not scan when kicked");
			return false;
		}
		if (monotonic_seconds() > rekick) {
			ktap_diag("kicking ksmd again");
			ksm_kick();
			rekick = monotonic_seconds() + 3;
		}
		usleep(1000);
	}
	return true;
}

bool ksm_step(void)
{
	double deadline = monotonic_seconds() + KSM_WAIT_SECONDS;
	long scans = ksm_wait_idle("full_scans", deadline);

	if (scans < 0 || !ksm_kick_until("full_scans", scans, deadline))
		return false;
	if (ksm_read("full_scans") != scans + 1) {
		ktap_diag("one kick, %ld full scans", ksm_read("full_scans") - scans);
		return false;
	}
	return true;
}

bool ksm_step_batch(void)
{
	double deadline = monotonic_seconds() + KSM_WAIT_SECONDS;
	long scanned = ksm_wait_idle("pages_scanned", deadline);

	if (scanned < 0 || !ksm_kick_until("pages_scanned", scanned, deadline))
		return false;
	return ksm_wait_idle("pages_scanned", deadline) >= 0;
}

long meminfo_kb(const char *key)
{
	char line[128], name[64];
	long kb = -1, v;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (kb < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63[^:]: %ld", name, &v) == 2 &&
		    !strcmp(name, key))
			kb = v;
	fclose(f);
	return kb;
}

long key_value(const char *path, const char *key)
{
	char name[64];
	long val;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", name, &val) == 2) {
		if (!strcmp(name, key)) {
			fclose(f);
			return val;
		}
	}
	fclose(f);
	return -1;
}

long vmstat(const char *key)
{
	return key_value("/proc/vmstat", key);
}

void *map_unfaulted(size_t pages)
{
	void *p = mmap(NULL, pages * page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	/* Small pages only: THP is a test of its own. */
	madvise(p, pages * page_size, MADV_NOHUGEPAGE);
	return p;
}

void *map_pages(size_t pages)
{
	void *p = map_unfaulted(pages);

	memset(p, 0, pages * page_size);
	return p;
}

/*
 * Does smaps show VM_MERGEABLE ("mg" in VmFlags) for the mapping of @p?
 * 1 or 0; -1 if no mapping holds @p. The calling thread's view
 * (/proc/thread-self), which a process whose main thread has exited still
 * has.
 */
int mergeable_flag(const void *p)
{
	unsigned long start, end, a = (unsigned long)p;
	char line[256];
	bool in = false;
	int ret = -1;
	FILE *f = fopen("/proc/thread-self/smaps", "r");

	if (!f)
		return -1;
	while (ret < 0 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = a >= start && a < end;
		else if (in && !strncmp(line, "VmFlags:", 8))
			ret = strstr(line, " mg") != NULL;
	}
	fclose(f);
	return ret;
}

int merge_pages(void *addr, size_t pages)
{
	return madvise(addr, pages * page_size, MADV_MERGEABLE) ? -errno : 0;
}

/* A cheap pattern that differs in every word between (seed, index) pairs. */
static uint64_t pattern_word(unsigned int seed, size_t index, size_t word)
{
	uint64_t x = ((uint64_t)seed << 40) ^ ((uint64_t)index << 12) ^ word;

	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	return x ^ (x >> 29) ^ 1;
}

void fill_pattern(void *page, unsigned int seed, size_t n)
{
	uint64_t *w = page;

	for (size_t i = 0; i < page_size / 8; i++)
		w[i] = pattern_word(seed, n, i);
}

bool holds_pattern(const void *page, unsigned int seed, size_t n)
{
	const uint64_t *w = page;

	for (size_t i = 0; i < page_size / 8; i++)
		if (w[i] != pattern_word(seed, n, i))
			return false;
	return true;
}

char *map_pairs(int n, unsigned int seed)
{
	char *p = map_pages(2 * n);

	for (int j = 0; j < 2 * n; j++)
		fill_pattern(p + j * page_size, seed, j / 2);
	return p;
}

bool pairs_hold(const char *p, int n, unsigned int seed)
{
	for (int j = 0; p && j < 2 * n; j++)
		if (!holds_pattern(p + j * page_size, seed, j / 2))
			return false;
	return true;
}

int pairs_shared(const char *p, int n)
{
	int shared = 0;

	for (int j = 0; j < n; j++) {
		unsigned long a = page_pfn(p + 2 * j * page_size);

		shared += a && a == page_pfn(p + (2 * j + 1) * page_size);
	}
	return shared;
}

void fill_page(void *base, size_t index, unsigned int seed)
{
	fill_pattern((char *)base + index * page_size, seed, index);
}

bool page_holds(const void *base, size_t index, unsigned int seed)
{
	return holds_pattern((const char *)base + index * page_size, seed,
			     index);
}

size_t pages_wrong(const void *base, size_t pages, unsigned int seed)
{
	size_t bad = 0;

	for (size_t i = 0; i < pages; i++)
		bad += !page_holds(base, i, seed);
	return bad;
}

long self_merging_pages(void)
{
	return read_long("/proc/thread-self/ksm_merging_pages");
}

int kids_start(struct kids *k, int n, kid_fn fn, void *arg)
{
	int down[2], up[2];

	k->n = 0;
	for (int i = 0; i < n; i++) {
		if (pipe(down) || pipe(up))
			return -errno;
		k->pid[i] = fork();
		if (k->pid[i] < 0)
			return -errno;
		if (k->pid[i] == 0) {
			/* Keep no sibling's pipe open: EOF must reach it. */
			for (int j = 0; j < i; j++) {
				close(k->to_kid[j]);
				close(k->from_kid[j]);
			}
			close(down[1]);
			close(up[0]);
			_exit(fn(arg, i, down[0], up[1]));
		}
		close(down[0]);
		close(up[1]);
		k->to_kid[i] = down[1];
		k->from_kid[i] = up[0];
		k->n++;
	}
	return 0;
}

bool kids_sync(struct kids *k, char cmd, char *replies)
{
	char r;

	for (int i = 0; i < k->n; i++)
		if (write(k->to_kid[i], &cmd, 1) != 1)
			return false;
	for (int i = 0; i < k->n; i++) {
		if (read(k->from_kid[i], &r, 1) != 1)
			return false;
		if (replies)
			replies[i] = r;
	}
	return true;
}

bool kids_collect(struct kids *k, char *replies)
{
	char r;

	for (int i = 0; i < k->n; i++) {
		if (read(k->from_kid[i], &r, 1) != 1)
			return false;
		if (replies)
			replies[i] = r;
	}
	return true;
}

bool kid_send(struct kids *k, int i, char cmd)
{
	return k->pid[i] && write(k->to_kid[i], &cmd, 1) == 1;
}

bool kids_send(struct kids *k, char cmd)
{
	bool ok = true;

	for (int i = 0; i < k->n; i++)
		if (k->pid[i] && !kid_send(k, i, cmd))
			ok = false;
	return ok;
}

bool kid_call(struct kids *k, int i, char cmd, char *reply)
{
	*reply = '-';
	return kid_send(k, i, cmd) && read(k->from_kid[i], reply, 1) == 1;
}

bool kid_reap(struct kids *k, int i)
{
	int status;

	if (!k->pid[i])
		return true;
	close(k->to_kid[i]);
	close(k->from_kid[i]);
	if (waitpid(k->pid[i], &status, 0) != k->pid[i])
		status = -1;
	k->pid[i] = 0;
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

bool kids_wait(struct kids *k)
{
	bool ok = true;

	for (int i = 0; i < k->n; i++)
		if (!kid_reap(k, i))
			ok = false;
	k->n = 0;
	return ok;
}

char kid_wait_cmd(int cmd_fd)
{
	char c;

	if (read(cmd_fd, &c, 1) != 1)
		_exit(3);
	return c;
}

void kid_reply(int reply_fd, char r)
{
	if (write(reply_fd, &r, 1) != 1)
		_exit(3);
}

/* /proc/PID/@file, or /proc/self/@file for @pid 0. */
static void proc_path(char *path, size_t size, pid_t pid, const char *file)
{
	if (pid)
		snprintf(path, size, "/proc/%d/%s", pid, file);
	else
		snprintf(path, size, "/proc/self/%s", file);
}

long smaps_kb(pid_t pid, const void *addr, const char *field)
{
	unsigned long start, end, a = (unsigned long)addr;
	size_t len = strlen(field);
	char path[64], line[256];
	bool in = false;
	long val = -1;
	FILE *f;

	proc_path(path, sizeof(path), pid, "smaps");
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* A mapping's header: "start-end perms ...". */
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = a >= start && a < end;
			continue;
		}
		if (in && !strncmp(line, field, len) && line[len] == ':') {
			val = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return val;
}

long ksm_stat(pid_t pid, const char *key)
{
	size_t len = strlen(key);
	char path[64], line[128];
	long val = -1;
	FILE *f;

	proc_path(path, sizeof(path), pid, "ksm_stat");
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ' ') {
			val = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return val;
}

/*
 * This process's pagemap stays open: an open of /proc/PID/pagemap costs
 * the guest more than a pass of ksmd over a test's pages does under KASAN,
 * which made waits bounded in full scans run out between two looks. The
 * descriptor is per process (a forked child's inherited one would read its
 * parent's pagemap).
 */
static int self_pagemap(void)
{
	static pid_t owner;
	static int fd = -1;

	if (owner != getpid()) {
		if (fd >= 0)
			close(fd);
		fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		owner = getpid();
	}
	return fd;
}

uint64_t pagemap_entry(pid_t pid, const void *addr)
{
	uint64_t ent = 0;
	char path[64];
	int fd;

	if (pid == 0 || pid == getpid()) {
		fd = self_pagemap();
	} else {
		proc_path(path, sizeof(path), pid, "pagemap");
		fd = open(path, O_RDONLY);
	}
	if (fd < 0)
		return 0;
	if (pread(fd, &ent, sizeof(ent),
		  (uintptr_t)addr / page_size * sizeof(ent)) != sizeof(ent))
		ent = 0;
	if (fd != self_pagemap())
		close(fd);
	return ent;
}

unsigned long pid_pfn(pid_t pid, const void *addr)
{
	uint64_t ent = pagemap_entry(pid, addr);

	return ent & PM_PRESENT ? ent & PM_PFN_MASK : 0;
}

unsigned long page_pfn(const void *addr)
{
	return pid_pfn(0, addr);
}

bool ksm_wait_until(bool (*cond)(void *arg), void *arg, int scans)
{
	long start = ksm_read("full_scans");
	double deadline = monotonic_seconds() + KSM_WAIT_SECONDS;

	while (!cond(arg)) {
		if (start < 0 || monotonic_seconds() > deadline ||
		    ksm_read("full_scans") > start + scans) {
			/*
			 * Passes may have ended while @cond was looked at: it
			 * gets one last look before the bound counts as run out.
			 */
			if (start >= 0 && cond(arg))
				return true;
			ktap_diag("condition not met after %ld full scans",
				  ksm_read("full_scans") - start);
			return false;
		}
		usleep(10000);
	}
	return true;
}

void ktap_skip_named(const char *name, const char *reason)
{
	printf("ok %d %s # SKIP %s\n", ++ktap_done, name, reason);
}

int ktap_skip_all(const char *const *names, size_t n, const char *why)
{
	for (size_t i = 0; i < n; i++)
		ktap_skip_named(names[i], why);
	return ktap_finish();
}

/* Does @line look like part of a splat? */
static bool splat_line(const char *line)
{
	static const char *const pat[] = {
		"BUG:", "WARNING:", "INFO: possible", "suspicious RCU usage",
		"Oops", "Kernel panic", "general protection fault",
		"Call Trace:", "KASAN", "UBSAN", "soft lockup", "hard LOCKUP",
		"self-detected stall", "blocked for more than",
	};

	for (size_t i = 0; i < ARRAY_SIZE(pat); i++)
		if (strstr(line, pat[i]))
			return true;
	return false;
}

int kernel_splats(void)
{
	int size = klogctl(10, NULL, 0), n, count = 0;
	const char *oom_end = NULL;	/* in an OOM report until this */
	char *buf, *line, *next;

	if (size <= 0)
		return 0;
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	n = klogctl(3, buf, size);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* The OOM killer's reports dump stacks: no splats. */
		if (strstr(line, "invoked oom-killer"))
			oom_end = "Killed process";
		if (strstr(line, "oom_reaper: unable to reap"))
			oom_end = "</TASK>";
		count += !oom_end && splat_line(line);
		if (oom_end && strstr(line, oom_end))
			oom_end = NULL;
	}
	free(buf);
	return count;
}

bool ksm_wait_scans_with_page(int scans, unsigned int seed, size_t n)
{
	char *p = map_pages(1);
	bool ok;

	fill_pattern(p, seed, n);
	ok = merge_pages(p, 1) == 0 && ksm_wait_scans(scans);
	munmap(p, page_size);
	return ok;
}

int memcg_create(const char *dir)
{
	char buf[256];
	int err;

	read_file(CGROUP_ROOT "/cgroup.controllers", buf, sizeof(buf));
	if (!strstr(buf, "memory"))
		return -ENOENT;
	err = write_file(CGROUP_ROOT "/cgroup.subtree_control", "+memory");
	if (err)
		return err;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	snprintf(buf, sizeof(buf), "%s/memory.reclaim", dir);
	return access(buf, W_OK) ? -errno : 0;
}

int become_tenant(const char *cg, uid_t uid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (write_file(path, "0"))
		return -1;
	if (setgid(uid) || setuid(uid))
		return -1;
	/*
	 * Changing ids without exec makes a process undumpable, so that not
	 * even its own user could read its /proc/PID files; a tenant started
	 * the usual way, by exec as that user, is dumpable.
	 */
	return prctl(PR_SET_DUMPABLE, 1) ? -1 : 0;
}

int fork_paused(pid_t *pid, int n)
{
	int fds[2], started = 0;
	char c;

	if (pipe(fds))
		return 0;
	for (; started < n; started++) {
		pid[started] = fork();
		if (pid[started] < 0)
			break;
		if (!pid[started]) {
			close(fds[0]);
			if (write(fds[1], "r", 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
	}
	close(fds[1]);
	for (int i = 0; i < started; i++)
		if (read(fds[0], &c, 1) != 1)
			break;
	close(fds[0]);
	return started;
}

void kill_all(pid_t *pid, int n)
{
	for (int i = 0; i < n; i++)
		kill(pid[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(pid[i], NULL, 0);
}

bool have_swap(void)
{
	char line[256];
	int lines = 0;
	FILE *f = fopen("/proc/swaps", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	return lines > 1;
}

long minor_faults(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? -1 : ru.ru_minflt;
}

bool with_secondary_mmu(void (*body)(void), const char *what)
{
	int status, fd;
	pid_t pid;

	if (access(NT_PATH, F_OK)) {
		ktap_diag("%s with a secondary MMU: no " NT_PATH, what);
		return false;
	}
	pid = fork();
	if (pid == 0) {
		fd = open(NT_PATH, O_RDWR);
		if (!CHECK(fd >= 0 && write(fd, "start", 5) == 5,
			   "start the notifiers"))
			_exit(1);
		body();
		_exit(checks_passed() ? 0 : 1);
	}
	return CHECK(pid > 0 && waitpid(pid, &status, 0) == pid &&
		     WIFEXITED(status) && WEXITSTATUS(status) == 0,
		     "%s with a secondary MMU", what);
}

double slab_padding(void)
{
	FILE *f = fopen("/proc/slabinfo", "r");
	char line[512], cache[64], path[128];
	double most = 1.0;
	long slab, object;

	if (!f)
		return most;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s", cache) != 1 ||
		    (strncmp(cache, "sp_", 3) && strncmp(cache, "ksm_", 4)))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/slab_size",
			 cache);
		slab = read_long(path);
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/object_size",
			 cache);
		object = read_long(path);
		if (slab > 0 && object > 0 && (double)slab / object > most)
			most = (double)slab / object;
	}
	fclose(f);
	return most;
}

void cgroup_remove(const char *cg)
{
	char path[256], line[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			write_file(CGROUP_ROOT "/cgroup.procs", line);
		fclose(f);
	}
	if (rmdir(cg) && errno != ENOENT)
		ktap_diag("rmdir %s: %s", cg, strerror(errno));
}

bool kid_load_merged(const char *cg, char *region, size_t n,
		     unsigned int seed, int reply_fd)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg ? cg : "");
	if (cg && write_file(path, "0")) {
		kid_reply(reply_fd, 'e');
		return false;
	}
	for (size_t j = 0; j < n; j++)
		fill_page(region, j, seed);
	if (merge_pages(region, n)) {
		kid_reply(reply_fd, 'e');
		return false;
	}
	kid_reply(reply_fd, 'r');
	return true;
}

int shared_pages_swapped(const pid_t *pid, int k, const char *region,
			 size_t n, int *present)
{
	int swapped = 0;

	*present = 0;
	for (size_t j = 0; j < n; j++) {
		const char *addr = region + j * page_size;
		uint64_t e0 = pagemap_entry(pid[0], addr);
		bool same = (e0 & PM_SWAP) && !(e0 & PM_PRESENT);

		for (int i = 0; i < k; i++) {
			uint64_t e = pagemap_entry(pid[i], addr);

			*present += !!(e & PM_PRESENT);
			if (e != e0)
				same = false;
		}
		swapped += same;
	}
	return swapped;
}

bool kids_sync_all(struct kids *k, char cmd, char want)
{
	char r[64];

	if (!kids_sync(k, cmd, r))
		return false;
	for (int i = 0; i < k->n; i++)
		if (r[i] != want)
			return false;
	return true;
}

const char *swap_memcg_setup(const char *cg)
{
	int err;

	if (!have_swap())
		return "no swap device";
	err = memcg_create(cg);
	if (err == -ENOENT)
		return "no memory cgroup controller";
	return err ? "cannot set up a memory cgroup" : NULL;
}

int pin_to_cpu(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set);
}

int ksmd_pin(int cpu, cpu_set_t *was)
{
	pid_t pid = ksmd_pid();

	if (!pid || sched_getaffinity(pid, sizeof(*was), was))
		return -1;
	return pin_to_cpu(pid, cpu);
}

int fifo_thread_start(pthread_t *th, int cpu, int prio, void *(*fn)(void *))
{
	struct sched_param sp = { .sched_priority = prio };
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &sp);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	err = pthread_create(th, &attr, fn, NULL);
	pthread_attr_destroy(&attr);
	return err;
}

/* pairs_child_start()'s child: never returns. */
static void pairs_child(size_t pages, unsigned int seed, int reply_fd)
{
	char *p = map_pages(pages);
	sigset_t set;
	char c;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (size_t i = 0; i < pages; i++)
		fill_pattern(p + i * page_size, seed, i / 2);
	c = merge_pages(p, pages) ? 'e' : 'r';
	if (write(reply_fd, &c, 1) != 1)
		_exit(1);
	if (sigwait(&set, &sig))
		_exit(2);
	for (size_t i = 0; i < pages; i++)
		if (!holds_pattern(p + i * page_size, seed, i / 2))
			_exit(3);
	_exit(0);
}

pid_t pairs_child_start(size_t pages, unsigned int seed)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (!pid) {
		close(fds[0]);
		pairs_child(pages, seed, fds[1]);
	}
	close(fds[1]);
	if (pid > 0 && (read(fds[0], &c, 1) != 1 || c != 'r')) {
		kill_all(&pid, 1);
		pid = -1;
	}
	close(fds[0]);
	return pid;
}

bool pairs_child_content_ok(pid_t pid)
{
	int status;

	if (kill(pid, SIGUSR1) || waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && !WEXITSTATUS(status);
}
