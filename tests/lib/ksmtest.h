/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ksmtest.h - helpers shared by the samepage guest tests: KTAP output,
 * /sys/kernel/mm/ksm access, bounded waits on full_scans, page patterns,
 * /proc views of a process, the kernel log, memory cgroups.
 */
#ifndef KSMTEST_H
#define KSMTEST_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KSM_DIR "/sys/kernel/mm/ksm/"
/* Upper bound, in seconds, of any wait on ksmd (software-emulated guest). */
#define KSM_WAIT_SECONDS 180

extern size_t page_size;

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* KTAP */
void ktap_plan(int tests);
void ktap_result(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ktap_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ktap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ktap_finish(void);
/*
 * Record a failed check: prints a diagnostic, makes the current test fail.
 * @cond is evaluated before the message's arguments, which may print what
 * it stored (arguments of a call have no order).
 */
#define CHECK(cond, ...) ({						\
	bool check_cond_ = (cond);					\
									\
	check_(check_cond_, #cond, __FILE__, __LINE__, __VA_ARGS__);	\
})
bool check_(bool cond, const char *expr, const char *file, int line,
	    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Did every CHECK since the last call pass? Resets the record. */
bool checks_passed(void);
/* Has every CHECK since the last checks_passed() passed? Resets nothing. */
bool checks_passed_so_far(void);

/* sysfs; ksm_read() returns -1 when the file cannot be read. */
long ksm_read(const char *name);
int ksm_write(const char *name, long value);	/* 0 or -errno */
int ksm_write_str(const char *name, const char *value);	/* 0 or -errno */
/* One write(2) of @len bytes: what it returned, or -errno. */
long ksm_write_raw(const char *name, const char *buf, size_t len);
/* The file's content without its trailing newline; 0 or -errno. */
int ksm_read_str(const char *name, char *buf, size_t size);
/* Save every writable setting now and restore it when the program exits. */
void ksm_save_settings(void);
/* Unmerge everything, then run with fast, deterministic settings. */
int ksm_reset(void);
/*
 * ksm_reset()'s settings, without its run=2 and run=1: each written, then
 * 0 or the first failed write's -errno, not counting the knobs a kernel
 * may lack (advisor_mode, and samepage's own: merge_domain, use_fresh_pages,
 * protect_after_scans, merge_all).
 */
int ksm_reset_settings(void);
/* Wait for @scans more completed full scans; false on timeout. */
bool ksm_wait_scans(int scans);
/* Wait until full_scans reaches @target, at most @seconds; false on timeout. */
bool ksm_wait_scans_until(long target, double seconds);
/* Wait until the counter @name reaches @value; false on timeout. */
bool ksm_wait_counter(const char *name, long value);

/* ksmd's pid; 0 if it cannot be found. */
pid_t ksmd_pid(void);

/* run=0: returns once ksmd is between two batches, so counters hold still. */
int ksm_pause(void);
int ksm_resume(void);	/* run=1 */
/*
 * run=1 with pages_to_scan=0 (and sleep_millisecs=1000): ksmd makes no
 * pass, and only merges on request (MADV_MERGE, samepage's) merge.
 * ksm_reset() undoes it.
 */
int ksm_idle(void);

/* The page counters of ksm.rst, read one after the other. */
struct ksm_counts {
	long shared, sharing, unshared, volatile_, full_scans;
};
void ksm_get_counts(struct ksm_counts *c);
#define KSM_ANY (-1L)	/* a counter ksm_wait_counts() does not care about */
/*
 * Wait (bounded in time and in full scans) until pages_shared,
 * pages_sharing, pages_unshared and pages_volatile hold the given values
 * in one snapshot taken with ksmd paused; ksmd runs again on return.
 * Use it only while ksmd runs (run=1, not step mode).
 */
bool ksm_wait_counts(long shared, long sharing, long unshared, long volatile_);
/* Print ksm_rmap_items of every process that has some. */
void ksm_diag_rmap_items(void);

/*
 * Step mode: ksmd scans only when ksm_step() asks, one full scan each
 * time (pages_to_scan must cover every mergeable page). ksm_step_mode()
 * stops ksmd (run=0) and makes it sleep for an hour between batches;
 * ksm_step() waits until ksmd sleeps, wakes it and waits for its scan.
 * ksm_reset() leaves step mode.
 */
int ksm_step_mode(void);
bool ksm_step(void);
/*
 * Step mode, one batch of pages_to_scan pages: returns once ksmd has
 * scanned and gone idle again. A batch that only skips pages (smart scan)
 * or ends the pass before visiting one is not seen, and times out.
 */
bool ksm_step_batch(void);

/* Read a number from an arbitrary file; -1 on error. */
long read_long(const char *path);
/* @path's content without its trailing newline ("" on error); 0 or -errno. */
int read_file(const char *path, char *buf, size_t size);
/* One write(2) of @s to @path: 0, -errno, or -EIO if it fell short. */
int write_file(const char *path, const char *s);
/* write_file(), opening with O_TRUNC (which clears tracefs "trace"). */
int write_file_trunc(const char *path, const char *s);
/* Seconds on CLOCK_MONOTONIC. */
double monotonic_seconds(void);
/* The CPU's cycle counter (x86), else monotonic nanoseconds. */
unsigned long long cycle_count(void);
/* The value of "key value" line @key in file @path; -1 if absent. */
long key_value(const char *path, const char *key);
/* The value of line "@key:" of /proc/meminfo, in kB; -1 if absent. */
long meminfo_kb(const char *key);
/* key_value() of /proc/vmstat. */
long vmstat(const char *key);

/* Memory */
void *map_pages(size_t pages);	/* anonymous private, faulted in, aborts on failure */
void *map_unfaulted(size_t pages);	/* the same, not faulted in */
int merge_pages(void *addr, size_t pages);	/* MADV_MERGEABLE; 0 or -errno */
/* VM_MERGEABLE (smaps "mg") on this process's mapping of @p; -1: none. */
int mergeable_flag(const void *p);
/* Fill the page at @page with the pattern (@seed, @n); does it hold it? */
void fill_pattern(void *page, unsigned int seed, size_t n);
bool holds_pattern(const void *page, unsigned int seed, size_t n);
/*
 * @n pairs of equal pages: pages 2j and 2j + 1 hold the pattern (@seed, j),
 * every pair another. pairs_hold(): every page holds its pattern (true
 * for no pairs, @p NULL); pairs_shared(): the pairs whose two pages share
 * a frame, by this process's pagemap.
 */
char *map_pairs(int n, unsigned int seed);
bool pairs_hold(const char *p, int n, unsigned int seed);
int pairs_shared(const char *p, int n);
/* Fill page @index of @base with the pattern (@seed, @index). */
void fill_page(void *base, size_t index, unsigned int seed);
/* Does page @index hold the pattern (@seed, @index)? */
bool page_holds(const void *base, size_t index, unsigned int seed);
/* Count of pages in [@base, @base + @pages) not holding their pattern. */
size_t pages_wrong(const void *base, size_t pages, unsigned int seed);
/* This process's ksm_merging_pages (/proc/thread-self/ksm_merging_pages). */
long self_merging_pages(void);

/*
 * Children: fork @n processes each running @fn(@arg, i); 0 or -errno.
 * A child exits with @fn's return value; one blocked in kid_wait_cmd()
 * exits with 3 when the parent closes its command pipe.
 */
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
/* kids_sync(), and did every child reply @want? */
bool kids_sync_all(struct kids *k, char cmd, char want);
/* Read one byte from each child (e.g. "ready"); false on error. */
bool kids_collect(struct kids *k, char *replies);
/* Send one byte to each child, expecting no reply (e.g. "quit"). */
bool kids_send(struct kids *k, char cmd);
/* Send one byte to child @i, expecting no reply; false on error. */
bool kid_send(struct kids *k, int i, char cmd);
/* Send one byte to child @i and read its one-byte reply; false on error. */
bool kid_call(struct kids *k, int i, char cmd, char *reply);
/* Close child @i's pipes and wait for it; true if it exited 0. */
bool kid_reap(struct kids *k, int i);
/* Wait for all children not yet reaped; true if every one exited 0. */
bool kids_wait(struct kids *k);
/* In a child: wait for a command byte, and reply with one. */
char kid_wait_cmd(int cmd_fd);
void kid_reply(int reply_fd, char r);
/*
 * Fork @n children that only pause, each once it has said it is up; their
 * pids in @pid. Returns how many started. kill_all() SIGKILLs and reaps
 * @n of them.
 */
int fork_paused(pid_t *pid, int n);
void kill_all(pid_t *pid, int n);
/* Is a swap device active (a line beyond the header in /proc/swaps)? */
bool have_swap(void);

/*
 * Per-process views of KSM, for the ABI tests. @pid 0 means this process.
 * smaps_kb(): the "@field:" value, in kB, of the /proc/PID/smaps entry of
 * the mapping that holds @addr; -1 if there is none.
 * ksm_stat(): the value of line "@key" of /proc/PID/ksm_stat; -1 if absent.
 * pagemap_entry(): the /proc/PID/pagemap entry of @addr (PFNs and swap
 * entries only for root); 0 if it cannot be read.
 * pid_pfn(): the PFN mapping @addr; 0 if the page is not present.
 * page_pfn(): pid_pfn() of this process.
 */
long smaps_kb(pid_t pid, const void *addr, const char *field);
long ksm_stat(pid_t pid, const char *key);
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define PM_PFN_MASK	((1ULL << 55) - 1)
uint64_t pagemap_entry(pid_t pid, const void *addr);
unsigned long pid_pfn(pid_t pid, const void *addr);
unsigned long page_pfn(const void *addr);
/*
 * Wait until @cond(@arg) holds, checking every 10 ms, for at most @scans
 * full scans and KSM_WAIT_SECONDS; true if it came to hold. ksmd must run.
 */
bool ksm_wait_until(bool (*cond)(void *arg), void *arg, int scans);

/* KTAP: test @name skipped, "ok N name # SKIP reason". */
void ktap_skip_named(const char *name, const char *reason);
/* KTAP: skip each of the @n tests @names for @why; returns ktap_finish(). */
int ktap_skip_all(const char *const *names, size_t n, const char *why);

/*
 * Lines of the kernel log that look like a splat (as scripts/ktap.sh),
 * outside the OOM killer's and OOM reaper's reports.
 */
int kernel_splats(void);
/*
 * Wait for @scans more full scans with a mergeable page of pattern
 * (@seed, @n) mapped meanwhile: ksmd scans only while some mm is
 * registered. False on failure or timeout.
 */
bool ksm_wait_scans_with_page(int scans, unsigned int seed, size_t n);

/*
 * What a KSM cache's object really takes over what the profit counts:
 * about 1 unless slab debugging (red zones, tracking: make test
 * DEBUG=kasan) pads every object. The largest slab_size / object_size of
 * the KSM caches (ours and mainline's names) in /sys/kernel/slab.
 */
double slab_padding(void);
/* This process's minor faults so far (getrusage()), or -1. */
long minor_faults(void);
/* samepage's notifier test driver (CONFIG_KSM_NOTIFIER_TEST). */
#define NT_PATH "/proc/ksm_notifier_test"
/*
 * Run @body in a child whose mm has a secondary MMU, the notifier test
 * driver's: there ksmd protects pages rather than watch their dirty
 * bits. True if the child passed its checks; false, with a diagnostic
 * naming @what, without the driver or when it failed.
 */
bool with_secondary_mmu(void (*body)(void), const char *what);

#define CGROUP_ROOT "/sys/fs/cgroup"
/*
 * Make @dir (a path below CGROUP_ROOT) a cgroup with the memory controller
 * and memory.reclaim: 0, -ENOENT without the memory controller, or -errno.
 */
int memcg_create(const char *dir);
/*
 * Move this process into cgroup @cg (a path) and become user and group
 * @uid, as the side-channel tests' tenants do: 0, or -1.
 */
int become_tenant(const char *cg, uid_t uid);
/*
 * Remove cgroup @cg, moving whatever is left in it back to the root
 * first; a diagnostic if it stays.
 */
void cgroup_remove(const char *cg);
/*
 * Set up memory cgroup @cg for a test that swaps: NULL when done, else
 * why not (no swap device, no memory controller), to skip with.
 */
const char *swap_memcg_setup(const char *cg);
/*
 * A child of kids_start() that holds @n pages at @region (mapped before
 * the fork): it joins cgroup @cg (none if NULL), fills page j with
 * pattern (@seed, j) and madvises them, then replies 'r', or 'e' and
 * returns false if any step failed.
 */
bool kid_load_merged(const char *cg, char *region, size_t n,
		     unsigned int seed, int reply_fd);
/*
 * The pages of @region, @n of them, that are one KSM page swapped out in
 * all of the @k processes @pid: the same swap entry in every pagemap.
 * *@present counts the PTEs of all of them still present.
 */
int shared_pages_swapped(const pid_t *pid, int k, const char *region,
			 size_t n, int *present);

/*
 * Fork a child that maps @pages pages, pages 2k and 2k+1 alike (pattern
 * (@seed, k)), makes them mergeable and pauses: its pid, or -1. On
 * SIGUSR1 it exits, 0 if every page still holds its content.
 */
pid_t pairs_child_start(size_t pages, unsigned int seed);
/* SIGUSR1 to such a child, reaped here: did its pages hold? */
bool pairs_child_content_ok(pid_t pid);

/* Run task @pid (0: the caller) on CPU @cpu only; 0 or -1. */
int pin_to_cpu(pid_t pid, int cpu);
/* Pin ksmd to CPU @cpu, its CPUs before into *@was; 0 or -1. */
int ksmd_pin(int cpu, cpu_set_t *was);
/*
 * Start thread *@th running @fn(NULL) at SCHED_FIFO @prio on CPU @cpu
 * only, for a latency probe; 0 or an error number.
 */
int fifo_thread_start(pthread_t *th, int cpu, int prio, void *(*fn)(void *));

#endif
