// SPDX-License-Identifier: GPL-2.0
/*
 * ksmtest.c - helpers shared by the samepage guest tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

size_t page_size = 4096;

static int ktap_done, ktap_failed;
static bool check_failed;

__attribute__((constructor)) static void ksmtest_init(void)
{
	page_size = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
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

long ksm_read(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), KSM_DIR "%s", name);
	return read_long(path);
}

int ksm_write_str(const char *name, const char *value)
{
	char path[128];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), KSM_DIR "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

int ksm_write(const char *name, long value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", value);
	return ksm_write_str(name, buf);
}

int ksm_reset(void)
{
	int err;

	err = ksm_write("run", 2);
	if (err)
		return err;
	/* Settings that make scans quick and their count predictable. */
	ksm_write("smart_scan", 0);
	ksm_write("use_zero_pages", 0);
	ksm_write("merge_across_nodes", 1);
	ksm_write("max_page_sharing", 256);
	ksm_write("sleep_millisecs", 0);
	ksm_write("pages_to_scan", 1000);
	return ksm_write("run", 1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

bool ksm_wait_scans(int scans)
{
	long target = ksm_read("full_scans") + scans;
	double deadline = now() + KSM_WAIT_SECONDS;

	while (ksm_read("full_scans") < target) {
		if (now() > deadline) {
			ktap_diag("timed out waiting for %d full scans", scans);
			return false;
		}
		usleep(10000);
	}
	return true;
}

bool ksm_wait_counter(const char *name, long value)
{
	long start = ksm_read("full_scans");
	double deadline = now() + KSM_WAIT_SECONDS;

	/* Bounded in full scans too: a value not reached in 20 never will. */
	while (ksm_read(name) != value) {
		if (now() > deadline || ksm_read("full_scans") > start + 20) {
			ktap_diag("%s is %ld, want %ld", name, ksm_read(name),
				  value);
			return false;
		}
		usleep(10000);
	}
	return true;
}

long vmstat(const char *key)
{
	char name[64];
	long val;
	FILE *f;

	f = fopen("/proc/vmstat", "r");
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

void *map_pages(size_t pages)
{
	void *p = mmap(NULL, pages * page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	/* Small pages only: THP is a test of its own. */
	madvise(p, pages * page_size, MADV_NOHUGEPAGE);
	memset(p, 0, pages * page_size);
	return p;
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

void fill_page(void *base, size_t index, unsigned int seed)
{
	uint64_t *w = (uint64_t *)((char *)base + index * page_size);

	for (size_t i = 0; i < page_size / 8; i++)
		w[i] = pattern_word(seed, index, i);
}

bool page_holds(const void *base, size_t index, unsigned int seed)
{
	const uint64_t *w =
		(const uint64_t *)((const char *)base + index * page_size);

	for (size_t i = 0; i < page_size / 8; i++)
		if (w[i] != pattern_word(seed, index, i))
			return false;
	return true;
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
	return read_long("/proc/self/ksm_merging_pages");
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

bool kids_wait(struct kids *k)
{
	bool ok = true;
	int status;

	for (int i = 0; i < k->n; i++) {
		close(k->to_kid[i]);
		close(k->from_kid[i]);
		if (waitpid(k->pid[i], &status, 0) != k->pid[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			ok = false;
	}
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
