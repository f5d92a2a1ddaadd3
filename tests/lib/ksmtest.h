/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ksmtest.h - helpers shared by the samepage guest tests: KTAP output,
 * /sys/kernel/mm/ksm access, bounded waits on full_scans, page patterns.
 */
#ifndef KSMTEST_H
#define KSMTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define KSM_DIR "/sys/kernel/mm/ksm/"
/* Upper bound, in seconds, of any wait on ksmd (software-emulated guest). */
#define KSM_WAIT_SECONDS 180

extern size_t page_size;

/* KTAP */
void ktap_plan(int tests);
void ktap_result(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ktap_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ktap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ktap_finish(void);
/* Record a failed check: prints a diagnostic, makes the current test fail. */
#define CHECK(cond, ...) check_((cond), #cond, __FILE__, __LINE__, __VA_ARGS__)
bool check_(bool cond, const char *expr, const char *file, int line,
	    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Did every CHECK since the last call pass? Resets the record. */
bool checks_passed(void);

/* sysfs; ksm_read() returns -1 when the file cannot be read. */
long ksm_read(const char *name);
int ksm_write(const char *name, long value);	/* 0 or -errno */
int ksm_write_str(const char *name, const char *value);	/* 0 or -errno */
/* Unmerge everything, then run with fast, deterministic settings. */
int ksm_reset(void);
/* Wait for @scans more completed full scans; false on timeout. */
bool ksm_wait_scans(int scans);
/* Wait until the counter @name reaches @value; false on timeout. */
bool ksm_wait_counter(const char *name, long value);

/* Read a number from an arbitrary file; -1 on error. */
long read_long(const char *path);
/* The value of "key value" line @key in /proc/vmstat; -1 if absent. */
long vmstat(const char *key);

/* Memory */
void *map_pages(size_t pages);	/* anonymous private, faulted in, aborts on failure */
int merge_pages(void *addr, size_t pages);	/* MADV_MERGEABLE; 0 or -errno */
/* Fill page @index of @base with the pattern (@seed, @index). */
void fill_page(void *base, size_t index, unsigned int seed);
/* Does page @index hold the pattern (@seed, @index)? */
bool page_holds(const void *base, size_t index, unsigned int seed);
/* Count of pages in [@base, @base + @pages) not holding their pattern. */
size_t pages_wrong(const void *base, size_t pages, unsigned int seed);
/* This process's ksm_merging_pages from /proc/self/ksm_merging_pages. */
long self_merging_pages(void);

/* Children: fork @n processes each running @fn(@arg, i); returns pids. */
struct kids {
	int n;
	pid_t pid[64];
	int to_kid[64];		/* write end: commands to child i */
	int from_kid[64];	/* read end: replies from child i */
};
typedef int (*kid_fn)(void *arg, int i, int cmd_fd, int reply_fd);
int kids_start(struct kids *k, int n, kid_fn fn, void *arg);
/* Send one byte to each child and wait for one byte back; false on error. */
bool kids_sync(struct kids *k, char cmd, char *replies);
/* Wait for all children; true if every one exited 0. */
bool kids_wait(struct kids *k);
/* In a child: wait for a command byte, and reply with one. */
char kid_wait_cmd(int cmd_fd);
void kid_reply(int reply_fd, char r);

#endif
