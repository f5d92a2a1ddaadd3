// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_bench.c - the KSM benchmark, run in the guest by samepage.mode=bench.
 *
 * Workloads, one after another, each on a freshly reset KSM (run=2, then
 * run=1 with ksm_reset()'s settings: smart_scan=0, sleep_millisecs=0,
 * pages_to_scan=1000, use_zero_pages=0, merge_across_nodes=1,
 * max_page_sharing=256, and on samepage merge_domain=system and
 * use_fresh_pages=0), each in child processes that exit afterwards so
 * that ksmd goes idle:
 *
 *   clones    CLONE_KIDS processes with the same CLONE_PAGES distinct pages:
 *             time and ksmd CPU to full merge from run=1 (all madvised
 *             while ksmd was stopped), memory saved;
 *             then, with ksmd stopped (run=0), the cost of breaking COW on
 *             one child's merged pages, of MADV_UNMERGEABLE on another's,
 *             and of run=2 on what is left. On samepage the merge is run
 *             again with merge_domain=user (all clones in one domain) and
 *             with use_fresh_pages=1: clones_{domain,fresh}_cpu_vs_off is
 *             its ksmd CPU over the first merge's.
 *   unique    16k, 64k, 256k and (in a guest of more than 5 GiB, as
 *             make bench boots) 1M distinct pages in one process: ksmd CPU
 *             per scanned page over MEASURE_SCANS full scans after the
 *             first one (which only takes checksums); at 64k also over
 *             the MEASURE_SCANS scans after those (unique_64k_rescan),
 *             when every page has held still for several passes.
 *   thp       the same on transparent huge pages (2 MiB aligned, advised
 *             MADV_HUGEPAGE, as QEMU advises guest RAM): unique_64k_thp_scan
 *             as unique at 64k, and unique_64k_thp_huge the share of the
 *             memory still in huge pages after; clones_thp the clones'
 *             merge time and ksmd CPU, and clones_thp_huge_{before,after}
 *             the share in huge pages before and after it; thp_vmlike,
 *             VM_KIDS "VMs" of VM_PAGES pages whose first half of huge
 *             pages is the same in all and the rest unique but for VM_FEW
 *             subpages each: after VM_SCANS full scans, the memory saved,
 *             the share still huge, huge mappings split (thp_split_pmd)
 *             per page merged and ksmd's CPU; thp_changing, the clones on huge pages with each
 *             child changing CHANGE_SUB subpages of every huge page all
 *             along: pages merged 2 and 8 guest seconds after run=1.
 *   request   REQ_KIDS processes load one image of REQ_PAGES pages (16 MiB)
 *             and it is merged two ways. By ksmd, at the bench's settings:
 *             request_ksmd_cpu, its CPU per page saved (pages_sharing) to
 *             the full merge. By MADV_MERGE (samepage's), every process
 *             asking at once with ksmd idle (run=1, pages_to_scan=0):
 *             request_cpu, the requests' CPU per page saved
 *             (request_vs_ksmd_cpu the ratio), and request_time, from
 *             the first request to the last one's return. Then by ksmd at mainline's default
 *             settings (pages_to_scan 100, sleep_millisecs 20):
 *             request_ksmd_default_time, from run=1 to 90% of the saving
 *             (request_vs_ksmd_default_time the ratio).
 *   writer    what change detection costs the workload: a process stores
 *             one word into each of its WRITER_PAGES unique pages (small,
 *             or on huge pages) every P full scans, WRITER_SWEEPS times,
 *             for P = 1, 2, 4 and 16, ksmd running from the madvise on.
 *             writer_{small,huge}_pP_cost: its CPU per store (faults
 *             included) over the same with ksmd stopped (run=0), measured
 *             before; writer_{small,huge}_pP_total: ksmd's CPU plus the
 *             writer's extra CPU, per page and full scan.
 *   volatile  VOLATILE_PAGES identical pages that a writer keeps changing:
 *             ksmd CPU per scanned page, and nothing may merge.
 *   zero_only 64k unique pages, scanned in the full mode and with
 *             zero_pages_only (samepage's; absent on stock):
 *             zero_only_scan_vs_full, ksmd CPU per page scanned, and
 *             zero_only_metadata_vs_full, slab grown per page of the
 *             workload, the zero-only mode's over the full mode's;
 *             zero_only_metadata, the zero-only mode's in bytes.
 *   estimate  estimate (samepage's; absent on stock) on the clones, the
 *             VM-like memory on huge pages and 64k unique pages:
 *             estimate_{clones,vmlike}_vs_real, the saving it counted
 *             over the saving the merge that follows makes;
 *             estimate_unique_{pages,real}, both for unique pages (0);
 *             estimate_scan_vs_full, its ksmd CPU per page scanned on
 *             the unique pages over the full mode's.
 *   pressure  pressure_only (samepage's; absent on stock) on an idle
 *             guest: 64k unique pages at mainline's default pace, ksmd's
 *             CPU per hour with run=1 (pressure_idle_run_cpu) and with
 *             pressure_only and nothing short (pressure_idle_cpu), and
 *             pressure_idle_vs_run, their ratio.
 *   hide      the clones, the VM-like memory on huge pages and 16k unique
 *             pages merged to a steady state (a full scan adds nothing,
 *             VM_SCANS scans at least), then a first write to every page
 *             of the workload: hide_off_{clones,vmlike,unique}_{saved,
 *             cpu,touch} without hide_merges (saved: pages_sharing +
 *             ksm_zero_pages; cpu: ksmd's seconds to get there; touch:
 *             the writers' CPU per page written, in ns), on both kernels;
 *             on samepage, the same with hide_merges over without:
 *             hide_{clones,vmlike,unique}_{saved,cpu,touch}_vs_off.
 *   scale     what a process's mappings cost: fork_kill_{400,2000}_recover,
 *             guest seconds until ksmd completes two full scans after
 *             N forked sharers of one KSM page are killed;
 *             migrate_{2k,16k}_vmas, guest ns per KSM page moved to the
 *             other node in a mapping split into that many VMAs (ksmd
 *             stopped); exit_4g_{reap,forget} (in a guest of more than
 *             5 GiB), the seconds to reap a process holding 4 GiB of
 *             merged pairs, then until ksmd has forgotten its pages.
 *
 * ksmd CPU is utime + stime of /proc/<ksmd>/stat, in clock ticks
 * (USER_HZ), over a span measured in pages by the pages_scanned delta.
 *
 * Metadata per tracked page: this kernel has no /proc/slabinfo (SLUB_TINY,
 * no SLUB_DEBUG), so it is the growth of the "Slab:" line of /proc/meminfo
 * from just before madvise (pages faulted in and filled) to after the
 * measured scans, divided by the pages KSM tracks then (one rmap item
 * each: pages_shared + pages_sharing + pages_unshared + pages_volatile).
 * Measured on the unique 64k workload and on the clones.
 *
 * Profiles: a kernel with CONFIG_PROFILING booted with profile=N (make
 * bench PROFILE=1) has /proc/profile. Then each measured span is also
 * profiled: the kernel's timer-tick samples, reset at the span's start and
 * printed at its end, a line per sampled bucket of kernel text, which the
 * host names by function (scripts/bench.sh, profile-FLAVOUR.txt).
 *
 * Output, on stdout (ttyS1, the host's ktap.log):
 *   metric NAME VALUE UNIT	one per metric
 *   profile SPAN ADDR HITS	kernel samples in the bucket at ADDR (hex)
 *   series clones T BYTES CPU	memory saved and ksmd's CPU time (seconds,
 *				since run=1) T guest seconds after run=1
 *   error TEXT			a check failed or a wait timed out
 *   bench done errors=N	last line
 */
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

#define CLONE_KIDS	4
#define CLONE_PAGES	4096		/* 16 MiB per child */
#define HUGE_SIZE	(2UL << 20)
#define VOLATILE_PAGES	16384
#define WRITER_PAGES	16384		/* 64 MiB */
#define WRITER_SWEEPS	6
#define REQ_KIDS	16
#define REQ_PAGES	4096		/* 16 MiB per process */
#define VM_KIDS		4
#define VM_PAGES	8192		/* 16 huge pages per "VM" */
#define VM_SUB		512		/* subpages of a huge page */
#define VM_FEW		8		/* shared subpages of a "few" THP */
#define VM_SCANS	12		/* full scans the VM-like row runs */
#define CHANGE_SUB	32		/* subpages each THP's writer changes */
#ifndef MADV_MERGE
#define MADV_MERGE	26		/* samepage's merge on request */
#endif
#define MEASURE_SCANS	3
#define PRESSURE_IDLE_S	20.0	/* guest seconds each mode idles */
#define SERIES_STEP	0.1		/* seconds between series samples */
#define WAIT_LIMIT	900.0		/* guest seconds, any single wait */

enum fill { FILL_CLONE, FILL_UNIQUE, FILL_VOLATILE, FILL_VMLIKE };

struct job {
	size_t pages;
	enum fill fill;
	bool huge;	/* on transparent huge pages, not small ones */
};

/* What a child replies to a command: a status byte and a duration. */
struct reply {
	char status;
	double seconds;
};

/* A point of measurement: guest time, ksmd CPU, KSM's progress. */
struct sample {
	double t;
	long ticks;
	long scanned;
	long scans;
};

static long clk_tck;
static int errors;

static void metric(const char *name, double value, const char *unit)
{
	printf("metric %s %.6g %s\n", name, value, unit);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	errors++;
	printf("error ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ksmd's utime + stime (fields 14 and 15 of /proc/<pid>/stat), in ticks. */
static long ksmd_ticks(void)
{
	unsigned long utime, stime;
	char path[64], buf[512];
	char *p;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", ksmd_pid());
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return -1;
	/* Field 3 (state) follows the comm's ')'; skip fields 3 to 13. */
	n = sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
		   &utime, &stime);
	return n == 2 ? (long)(utime + stime) : -1;
}

static void sample(struct sample *s)
{
	s->t = monotonic_seconds();
	s->ticks = ksmd_ticks();
	s->scanned = ksm_read("pages_scanned");
	s->scans = ksm_read("full_scans");
}

/* Restart the kernel profile, if there is one. */
static void prof_begin(void)
{
	FILE *f = fopen("/proc/profile", "w");

	if (f) {
		fputs("0\n", f);
		fclose(f);
	}
}

/* The address of _stext, where /proc/profile's first bucket starts. */
static unsigned long prof_text_start(void)
{
	unsigned long addr = 0, a;
	char line[256], name[128];
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return 0;
	while (!addr && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx %*c %127s", &a, name) == 2 &&
		    !strcmp(name, "_stext"))
			addr = a;
	fclose(f);
	return addr;
}

/* Print the samples since prof_begin(), a line per sampled bucket. */
static void prof_end(const char *span)
{
	unsigned long text = prof_text_start();
	unsigned int step, hits;
	unsigned long i;
	FILE *f;

	f = fopen("/proc/profile", "r");
	if (!f || !text) {
		if (f)
			fclose(f);
		return;
	}
	if (fread(&step, sizeof(step), 1, f) == 1)
		for (i = 0; fread(&hits, sizeof(hits), 1, f) == 1; i++)
			if (hits)
				printf("profile %s %lx %u\n", span,
				       text + i * step, hits);
	fclose(f);
}

static double cpu_seconds(const struct sample *a, const struct sample *b)
{
	return (double)(b->ticks - a->ticks) / clk_tck;
}

/* ksmd CPU per page scanned between @a and @b, in ns. */
static double ns_per_page(const struct sample *a, const struct sample *b)
{
	long pages = b->scanned - a->scanned;

	return pages > 0 ? cpu_seconds(a, b) * 1e9 / pages : -1;
}

/* The "Slab:" line of /proc/meminfo, in bytes; -1 if absent. */
static long slab_bytes(void)
{
	long kb = meminfo_kb("Slab");

	return kb < 0 ? -1 : kb * 1024;
}

static long tracked_pages(void)
{
	return ksm_read("pages_shared") + ksm_read("pages_sharing") +
	       ksm_read("pages_unshared") + ksm_read("pages_volatile");
}

static void metadata_metric(const char *name, long slab_before)
{
	long tracked = tracked_pages();
	long grown = slab_bytes() - slab_before;

	if (tracked <= 0 || slab_before < 0) {
		fail("%s: no tracked pages or no Slab line", name);
		return;
	}
	metric(name, (double)grown / tracked, "B/page");
}

/* Wait until full_scans reaches @target; false, and an error, on timeout. */
static bool wait_scans_until(long target)
{
	if (ksm_wait_scans_until(target, WAIT_LIMIT))
		return true;
	fail("timed out waiting for full scan %ld", target);
	return false;
}

/*
 * ksm_reset(), but a failed write of a setting is an error and leaves ksmd
 * stopped; the knobs that a kernel may lack (advisor_mode, samepage's) are
 * not checked.
 */
static bool reset(void)
{
	if (ksm_write("run", 2)) {
		fail("cannot unmerge (run=2)");
		return false;
	}
	if (ksm_reset_settings() || ksm_write("run", 1)) {
		fail("cannot set the bench's KSM settings");
		return false;
	}
	return true;
}

/* Children */

static void reply(int fd, char status, double seconds)
{
	struct reply r = { status, seconds };

	if (write(fd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
}

static char call(struct kids *k, int i, char cmd, double *seconds)
{
	struct reply r;

	if (write(k->to_kid[i], &cmd, 1) != 1 ||
	    read(k->from_kid[i], &r, sizeof(r)) != sizeof(r))
		return 0;
	if (seconds)
		*seconds = r.seconds;
	return r.status;
}

/* Send @cmd to every child; true if all answered 'k'. */
static bool call_all(struct kids *k, char cmd)
{
	bool ok = true;

	for (int i = 0; i < k->n; i++)
		ok &= call(k, i, cmd, NULL) == 'k';
	return ok;
}

static void stop_kids(struct kids *k)
{
	call_all(k, 'q');
	if (!kids_wait(k))
		fail("a child failed");
}

/*
 * Distinct pages (for one seed), cheap to fill: a 64-bit value per page;
 * runs of @same pages alike (1: every page distinct).
 */
static void fill_unique(char *mem, size_t pages, unsigned int seed,
			size_t same)
{
	for (size_t i = 0; i < pages; i++) {
		uint64_t *w = (uint64_t *)(mem + i * page_size);
		uint64_t v = ((uint64_t)seed << 40 | i / same) *
			     0x9e3779b97f4a7c15ULL;

		for (size_t j = 0; j < page_size / 8; j++)
			w[j] = v + j;
	}
}

/*
 * VM-like memory for "VM" @i: the first half of its huge pages the same in
 * every VM (a guest kernel, a shared page cache), the second half unique
 * but for VM_FEW subpages each.
 */
static void fill_vmlike(char *mem, size_t pages, int i)
{
	size_t half = pages / VM_SUB / 2;

	for (size_t p = 0; p < pages; p++) {
		bool same = p / VM_SUB < half || p % VM_SUB < VM_FEW;

		fill_unique(mem + p * page_size, 1, same ? 1 : 100 + i, 1);
		/* fill_unique() numbers from 0: tell the pages apart. */
		*(uint64_t *)(mem + p * page_size) ^= p;
	}
}

static void fill(const struct job *job, char *mem, int i)
{
	switch (job->fill) {
	case FILL_CLONE:
		fill_unique(mem, job->pages, 1, 1);
		break;
	case FILL_UNIQUE:
		fill_unique(mem, job->pages, 100 + i, 1);
		break;
	case FILL_VOLATILE:
		memset(mem, 0x5a, job->pages * page_size);
		break;
	case FILL_VMLIKE:
		fill_vmlike(mem, job->pages, i);
		break;
	}
}

/*
 * Until a command arrives, change the first CHANGE_SUB subpages of each
 * huge page every 5 ms, each child its own way (@i).
 */
static void write_thp_heads(char *mem, size_t pages, int i, int cmd_fd)
{
	struct pollfd pfd = { .fd = cmd_fd, .events = POLLIN };
	uint64_t round = 0;

	while (!poll(&pfd, 1, 0)) {
		round++;
		for (size_t p = 0; p < pages; p++)
			if (p % VM_SUB < CHANGE_SUB)
				*(volatile uint64_t *)(mem + p * page_size + 16) =
					round * 64 + i;
		usleep(5000);
	}
}

/* Touch one word of every page, on and on, until a command arrives. */
static void write_volatile(char *mem, size_t pages, int cmd_fd)
{
	struct pollfd pfd = { .fd = cmd_fd, .events = POLLIN };
	uint64_t round = 0;

	while (!poll(&pfd, 1, 0)) {
		round++;
		for (size_t p = 0; p < pages; p++)
			*(volatile uint64_t *)(mem + p * page_size) = round;
		usleep(5000);
	}
}

static double write_each_page(char *mem, size_t pages)
{
	double t0 = monotonic_seconds();

	for (size_t p = 0; p < pages; p++)
		((volatile char *)mem)[p * page_size] ^= 1;
	return monotonic_seconds() - t0;
}

/* The CPU time of one store into each page, its faults included. */
static double write_each_page_cpu(char *mem, size_t pages)
{
	struct timespec a, b;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (size_t p = 0; p < pages; p++)
		((volatile char *)mem)[p * page_size + 8] ^= 1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	return b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9;
}

static double madvise_timed(char *mem, size_t pages, int advice)
{
	double t0 = monotonic_seconds();

	if (madvise(mem, pages * page_size, advice))
		return -1;
	return monotonic_seconds() - t0;
}

/* The CPU time madvise(@advice) takes in this process; -1 if it fails. */
static double madvise_cpu(char *mem, size_t pages, int advice)
{
	struct timespec a, b;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	if (madvise(mem, pages * page_size, advice))
		return -1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	return b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9;
}

/*
 * @pages pages, faulted, on transparent huge pages where the kernel can
 * give them: 2 MiB aligned and advised MADV_HUGEPAGE.
 */
static char *map_huge(size_t pages)
{
	size_t len = pages * page_size;
	char *raw, *p;

	raw = mmap(NULL, len + HUGE_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	p = (char *)(((uintptr_t)raw + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1));
	madvise(p, len, MADV_HUGEPAGE);
	memset(p, 0, len);
	return p;
}

/* The share of @pages pages that the system's huge pages could hold. */
static double huge_share(size_t pages)
{
	return meminfo_kb("AnonHugePages") * 1024.0 / (pages * page_size);
}

static int kid_main(void *arg, int i, int cmd_fd, int reply_fd)
{
	const struct job *job = arg;
	char *mem = job->huge ? map_huge(job->pages) : map_pages(job->pages);
	double t;

	fill(job, mem, i);
	kid_reply(reply_fd, 'k');	/* ready */
	for (;;) {
		switch (kid_wait_cmd(cmd_fd)) {
		case 'm':
			t = madvise_timed(mem, job->pages, MADV_MERGEABLE);
			reply(reply_fd, t < 0 ? 'e' : 'k', t);
			break;
		case 'v':
			t = madvise_timed(mem, job->pages, MADV_MERGEABLE);
			reply(reply_fd, t < 0 ? 'e' : 'k', t);
			write_volatile(mem, job->pages, cmd_fd);
			break;
		case 'c':
			t = madvise_timed(mem, job->pages, MADV_MERGEABLE);
			reply(reply_fd, t < 0 ? 'e' : 'k', t);
			write_thp_heads(mem, job->pages, i, cmd_fd);
			break;
		case 'w':
			reply(reply_fd, 'k', write_each_page(mem, job->pages));
			break;
		case 'W':
			reply(reply_fd, 'k',
			      write_each_page_cpu(mem, job->pages));
			break;
		case 'u':
			t = madvise_timed(mem, job->pages, MADV_UNMERGEABLE);
			reply(reply_fd, t < 0 ? 'e' : 'k', t);
			break;
		case 'r':
			t = madvise_cpu(mem, job->pages, MADV_MERGE);
			reply(reply_fd, t < 0 ? 'e' : 'k', t);
			break;
		case 'q':
			reply(reply_fd, 'k', 0);
			return 0;
		default:
			reply(reply_fd, 'e', 0);
		}
	}
}

static bool start_kids(struct kids *k, int n, struct job *job)
{
	if (kids_start(k, n, kid_main, job) || !kids_collect(k, NULL)) {
		fail("cannot start %d children", n);
		return false;
	}
	return true;
}

/* Workloads */

/* One point of the clones series: time, memory saved, ksmd CPU. */
static void series_point(const struct sample *start, double t, long sharing)
{
	printf("series clones %.3f %ld %.2f\n", t - start->t,
	       sharing * (long)page_size,
	       (double)(ksmd_ticks() - start->ticks) / clk_tck);
}

/* Poll until the clones are fully merged, printing the series if @series. */
static bool wait_merged(const struct sample *start, long sharing, long shared,
			bool series)
{
	double next = start->t;
	long s;

	for (;;) {
		double t = monotonic_seconds();

		s = ksm_read("pages_sharing");
		if (series && t >= next) {
			series_point(start, t, s);
			while (next <= t)
				next += SERIES_STEP;
		}
		if (s == sharing && ksm_read("pages_shared") == shared)
			break;
		if (t - start->t > WAIT_LIMIT) {
			fail("clones: pages_sharing %ld, want %ld", s, sharing);
			return false;
		}
		usleep(10000);
	}
	if (series)
		series_point(start, monotonic_seconds(), s);
	return true;
}

/*
 * Merge the clones from run=1 and report the metrics; returns ksmd's CPU
 * seconds for it, or -1. The variants (@name not "clones") print no series
 * and only time and CPU.
 */
static double clones_merge(struct kids *k, const char *name)
{
	long sharing = (CLONE_KIDS - 1) * CLONE_PAGES;
	bool main_run = !strcmp(name, "clones");
	long slab0 = slab_bytes();
	struct sample a, b;
	char m[64];

	/* All madvise with ksmd stopped: the clock starts with ksmd. */
	ksm_write("run", 0);
	if (!call_all(k, 'm')) {
		fail("%s: madvise failed", name);
		return -1;
	}
	sample(&a);
	prof_begin();
	ksm_write("run", 1);
	if (!wait_merged(&a, sharing, CLONE_PAGES, main_run))
		return -1;
	sample(&b);
	prof_end(name);
	snprintf(m, sizeof(m), "%s_merge_time", name);
	metric(m, b.t - a.t, "s");
	snprintf(m, sizeof(m), "%s_merge_ksmd_cpu", name);
	metric(m, cpu_seconds(&a, &b), "s");
	if (!main_run)
		return cpu_seconds(&a, &b);
	metric("clones_merge_pages_scanned", b.scanned - a.scanned, "pages");
	metric("clones_saved", (double)sharing * page_size / (1 << 20), "MiB");
	metric("clones_general_profit",
	       (double)ksm_read("general_profit") / (1 << 20), "MiB");
	metadata_metric("clones_metadata", slab0);
	return cpu_seconds(&a, &b);
}

/* With ksmd stopped: COW break, MADV_UNMERGEABLE, then run=2. */
static void clones_unmerge(struct kids *k)
{
	long left = (CLONE_KIDS - 2) * CLONE_PAGES;
	double t, t0;

	printf("# COW break, MADV_UNMERGEABLE: %d pages each; run=2: %ld\n",
	       CLONE_PAGES, left);
	ksm_write("run", 0);
	if (call(k, 0, 'w', &t) != 'k')
		fail("clones: COW break failed");
	metric("cow_break", t * 1e9 / CLONE_PAGES, "ns/page");
	if (call(k, 1, 'u', &t) != 'k')
		fail("clones: MADV_UNMERGEABLE failed");
	metric("unmerge_madvise", t * 1e9 / CLONE_PAGES, "ns/page");
	/* The counters lag until ksmd's next visit: what is left is known. */
	t0 = monotonic_seconds();
	prof_begin();
	if (ksm_write("run", 2))
		fail("clones: run=2 failed");
	t = monotonic_seconds() - t0;
	prof_end("unmerge_run2");
	metric("unmerge_run2", t * 1e9 / left, "ns/page");
	if (ksm_read("pages_sharing") || ksm_read("pages_shared"))
		fail("clones: pages left merged after run=2");
}

/*
 * The clones merged again with samepage's setting @file=@value on (all
 * clones are root's: one domain under merge_domain=user), and its ksmd CPU
 * as a ratio to @off, the same workload's without it in this run.
 */
static void bench_clones_with(const char *name, const char *file,
			      const char *value, double off)
{
	struct job job = { CLONE_PAGES, FILL_CLONE, false };
	char m[64];
	struct kids k;
	double on;

	printf("# %s: clones with %s=%s\n", name, file, value);
	if (!reset() || ksm_write_str(file, value)) {
		fail("%s: cannot set %s=%s", name, file, value);
		return;
	}
	if (!start_kids(&k, CLONE_KIDS, &job))
		return;
	on = clones_merge(&k, name);
	if (on >= 0 && off > 0) {
		snprintf(m, sizeof(m), "%s_cpu_vs_off", name);
		metric(m, on / off, "x");
	}
	stop_kids(&k);
	ksm_write("run", 2);
}

/*
 * The clones on transparent huge pages: ksmd's CPU and time to merge them
 * all (each merge splits the huge page it falls in, on both kernels), and
 * the share of their memory still in huge pages after.
 */
static void bench_clones_thp(void)
{
	struct job job = { CLONE_PAGES, FILL_CLONE, true };
	struct kids k;
	double before;

	printf("# clones_thp: %d processes x %d pages, huge\n", CLONE_KIDS,
	       CLONE_PAGES);
	if (!reset() || !start_kids(&k, CLONE_KIDS, &job))
		return;
	before = huge_share(CLONE_KIDS * CLONE_PAGES);
	metric("clones_thp_huge_before", before, "share");
	if (before < 0.5)
		fail("clones_thp: %.2f of the memory in huge pages", before);
	if (clones_merge(&k, "clones_thp") >= 0)
		metric("clones_thp_huge_after",
		       huge_share(CLONE_KIDS * CLONE_PAGES), "share");
	stop_kids(&k);
	ksm_write("run", 2);
}

/*
 * VM-like memory on huge pages (fill_vmlike()): after VM_SCANS full scans,
 * the memory saved, the share still in huge pages, the huge pages split
 * per page merged, and ksmd's CPU. Stock splits every huge page with a
 * duplicate; samepage only those with thp_split_min of them.
 */
static void bench_thp_vmlike(void)
{
	struct job job = { VM_PAGES, FILL_VMLIKE, true };
	struct sample a, b;
	long split, sharing;
	struct kids k;

	printf("# thp_vmlike: %d processes x %d pages, huge\n", VM_KIDS,
	       VM_PAGES);
	if (!reset() || !start_kids(&k, VM_KIDS, &job))
		return;
	if (huge_share(VM_KIDS * VM_PAGES) < 0.5)
		fail("thp_vmlike: %.2f of the memory in huge pages",
		     huge_share(VM_KIDS * VM_PAGES));
	ksm_write("run", 0);
	if (!call_all(&k, 'm')) {
		fail("thp_vmlike: madvise failed");
		goto out;
	}
	/*
	 * Huge mappings lost: a PMD split. samepage may split a THP's PMD
	 * and free its folio whole (thp_split_page would miss it); stock's
	 * folio splits split their PMDs too.
	 */
	split = vmstat("thp_split_pmd");
	sample(&a);
	ksm_write("run", 1);
	if (!wait_scans_until(a.scans + VM_SCANS))
		goto out;
	sample(&b);
	sharing = ksm_read("pages_sharing");
	metric("thp_vmlike_saved", (double)sharing * page_size / (1 << 20),
	       "MiB");
	metric("thp_vmlike_huge_after", huge_share(VM_KIDS * VM_PAGES),
	       "share");
	metric("thp_vmlike_splits_per_merged",
	       sharing ? (double)(vmstat("thp_split_pmd") - split) / sharing :
			 0, "x");
	metric("thp_vmlike_ksmd_cpu", cpu_seconds(&a, &b), "s");
out:
	stop_kids(&k);
	ksm_write("run", 2);
}

/* pages_sharing once @seconds of guest time passed since @a. */
static long sharing_at(const struct sample *a, double seconds)
{
	while (monotonic_seconds() - a->t < seconds)
		usleep(10000);
	return ksm_read("pages_sharing");
}

/*
 * Changing memory on huge pages: the clones on huge pages, each child
 * changing the first CHANGE_SUB subpages of every huge page all along;
 * the pages merged 2 and 8 guest seconds after ksmd starts.
 */
static void bench_thp_changing(void)
{
	struct job job = { CLONE_PAGES, FILL_CLONE, true };
	struct sample a;
	struct kids k;

	printf("# thp_changing: %d processes x %d pages, huge, changing\n",
	       CLONE_KIDS, CLONE_PAGES);
	if (!reset() || !start_kids(&k, CLONE_KIDS, &job))
		return;
	ksm_write("run", 0);
	if (!call_all(&k, 'c')) {
		fail("thp_changing: madvise failed");
		goto out;
	}
	sample(&a);
	ksm_write("run", 1);
	metric("thp_changing_merged_2s", sharing_at(&a, 2), "pages");
	metric("thp_changing_merged_8s", sharing_at(&a, 8), "pages");
out:
	stop_kids(&k);
	ksm_write("run", 2);
}

static void bench_clones(void)
{
	struct job job = { CLONE_PAGES, FILL_CLONE, false };
	struct kids k;
	double off;

	printf("# clones: %d processes x %d pages\n", CLONE_KIDS, CLONE_PAGES);
	if (!reset() || !start_kids(&k, CLONE_KIDS, &job))
		return;
	off = clones_merge(&k, "clones");
	clones_unmerge(&k);
	stop_kids(&k);
	/* samepage's merge domains and fresh pages; stock has neither. */
	if (ksm_read_str("merge_domain", (char[64]){ 0 }, 64))
		return;
	bench_clones_with("clones_domain", "merge_domain", "user", off);
	bench_clones_with("clones_fresh", "use_fresh_pages", "1", off);
}

/* Poll until pages_sharing reaches @want; the guest seconds, or -1. */
static double wait_sharing(long want)
{
	double t0 = monotonic_seconds(), t;

	while ((t = monotonic_seconds() - t0) < WAIT_LIMIT) {
		if (ksm_read("pages_sharing") >= want)
			return t;
		usleep(10000);
	}
	fail("request: pages_sharing %ld, want %ld", ksm_read("pages_sharing"),
	     want);
	return -1;
}

/* REQ_KIDS processes with one image; ksmd stopped, nothing madvised. */
static bool request_load(struct kids *k, struct job *job)
{
	if (!reset())
		return false;
	ksm_write("run", 0);
	return start_kids(k, REQ_KIDS, job);
}

/* ksmd at the bench's settings: its CPU per page saved. */
static double request_by_ksmd(struct job *job, long full)
{
	struct sample a, b;
	struct kids k;
	double ns = -1;

	if (!request_load(&k, job))
		return -1;
	if (call_all(&k, 'm')) {
		sample(&a);
		ksm_write("run", 1);
		if (wait_sharing(full) >= 0) {
			sample(&b);
			ns = cpu_seconds(&a, &b) * 1e9 / full;
			metric("request_ksmd_cpu", ns, "ns/page");
		}
	}
	stop_kids(&k);
	return ns;
}

/*
 * Every process asks at once: their CPU per page saved, or -1; the time
 * from the first request to the last return in *@time.
 */
static double request_by_madvise(struct job *job, long full, double *time)
{
	double t0, t, cpu = 0, ns = -1;
	struct kids k;
	bool ok = true;

	if (!request_load(&k, job))
		return -1;
	/* Requests merge while run is 1: ksmd stays idle meanwhile. */
	ok = !ksm_idle();
	t0 = monotonic_seconds();
	for (int i = 0; i < k.n; i++)
		ok &= write(k.to_kid[i], "r", 1) == 1;
	for (int i = 0; i < k.n; i++) {
		struct reply r;

		ok &= read(k.from_kid[i], &r, sizeof(r)) == sizeof(r) &&
		      r.status == 'k';
		cpu += r.seconds;
	}
	t = monotonic_seconds() - t0;
	if (!ok) {
		printf("# request: no MADV_MERGE here\n");
	} else if (ksm_read("pages_sharing") * 10 < full * 9) {
		fail("request: pages_sharing %ld of %ld", ksm_read("pages_sharing"),
		     full);
	} else {
		ns = cpu * 1e9 / ksm_read("pages_sharing");
		metric("request_cpu", ns, "ns/page");
		metric("request_time", t, "s");
	}
	stop_kids(&k);
	*time = t;
	return ns;
}

/* ksmd at mainline's defaults: the time to 90% of the saving. */
static double request_by_default_ksmd(struct job *job, long full)
{
	double t = -1;
	struct kids k;

	if (!request_load(&k, job))
		return -1;
	if (!ksm_write("pages_to_scan", 100) &&
	    !ksm_write("sleep_millisecs", 20) && call_all(&k, 'm')) {
		ksm_write("run", 1);
		t = wait_sharing(full * 9 / 10);
		if (t >= 0)
			metric("request_ksmd_default_time", t, "s");
	}
	stop_kids(&k);
	return t;
}

static void bench_request(void)
{
	struct job job = { REQ_PAGES, FILL_CLONE, false };
	long full = (REQ_KIDS - 1) * REQ_PAGES;
	double ksmd_ns, req_ns, req_t, def_t;

	printf("# request: %d processes x %d pages\n", REQ_KIDS, REQ_PAGES);
	ksmd_ns = request_by_ksmd(&job, full);
	prof_begin();
	req_ns = request_by_madvise(&job, full, &req_t);
	prof_end("request");
	def_t = request_by_default_ksmd(&job, full);
	/* Ours only: stock has no MADV_MERGE to compare ksmd with. */
	if (req_ns > 0 && ksmd_ns > 0)
		metric("request_vs_ksmd_cpu", req_ns / ksmd_ns, "ratio");
	if (req_ns > 0 && def_t > 0)
		metric("request_vs_ksmd_default_time", req_t / def_t, "ratio");
	ksm_write("run", 2);
}

/*
 * The same unique pages over MEASURE_SCANS more full scans, from @a: by
 * then every page has stayed unchanged for several passes.
 */
static void unique_rescan(struct sample *a)
{
	struct sample b;

	prof_begin();
	if (wait_scans_until(a->scans + MEASURE_SCANS)) {
		sample(&b);
		prof_end("unique_64k_rescan");
		metric("unique_64k_rescan", ns_per_page(a, &b), "ns/page");
	}
}

static void bench_unique(size_t pages, const char *name, bool huge)
{
	struct job job = { pages, FILL_UNIQUE, huge };
	struct sample a, b;
	char metric_name[64];
	struct kids k;
	long slab0, scans;

	printf("# unique: %zu pages\n", pages);
	if (!reset() || !start_kids(&k, 1, &job))
		return;
	slab0 = slab_bytes();
	scans = ksm_read("full_scans");
	if (call(&k, 0, 'm', NULL) != 'k')
		fail("unique: madvise failed");
	/* The first full scan only takes checksums: measure after it. */
	if (wait_scans_until(scans + 1)) {
		sample(&a);
		prof_begin();
		if (wait_scans_until(a.scans + MEASURE_SCANS)) {
			sample(&b);
			snprintf(metric_name, sizeof(metric_name),
				 "unique_%s_scan", name);
			prof_end(metric_name);
			metric(metric_name, ns_per_page(&a, &b), "ns/page");
			if (huge) {
				snprintf(metric_name, sizeof(metric_name),
					 "unique_%s_huge", name);
				metric(metric_name, huge_share(pages), "share");
			} else if (pages == 65536) {
				metadata_metric("unique_64k_metadata", slab0);
				unique_rescan(&b);
			}
		}
	}
	if (ksm_read("pages_sharing"))
		fail("unique: %ld pages merged", ksm_read("pages_sharing"));
	stop_kids(&k);
}

/*
 * One mode's cost on 64k unique pages: ksmd's CPU per page scanned over
 * MEASURE_SCANS full scans after the first, into *@ns, and the slab KSM
 * grew per page of the workload, into *@bytes. False on failure.
 */
static bool zero_only_cost(int zero_only, double *ns, double *bytes)
{
	struct job job = { 65536, FILL_UNIQUE, false };
	struct sample a, b;
	struct kids k;
	long slab0, scans;
	bool ok = false;

	if (!reset() || ksm_write("zero_pages_only", zero_only) ||
	    !start_kids(&k, 1, &job))
		return false;
	slab0 = slab_bytes();
	scans = ksm_read("full_scans");
	if (call(&k, 0, 'm', NULL) != 'k')
		fail("zero_only: madvise failed");
	else if (wait_scans_until(scans + 1)) {
		sample(&a);
		prof_begin();
		if (wait_scans_until(a.scans + MEASURE_SCANS)) {
			sample(&b);
			prof_end(zero_only ? "zero_only" : "zero_only_full");
			*ns = ns_per_page(&a, &b);
			*bytes = (double)(slab_bytes() - slab0) / job.pages;
			ok = *ns > 0 && slab0 >= 0;
		}
	}
	stop_kids(&k);
	ksm_write("zero_pages_only", 0);
	return ok;
}

/*
 * zero_pages_only (samepage's; nothing on stock) against the full mode,
 * both in this run on the same unique pages: ksmd's CPU per page scanned
 * and the memory KSM keeps per page, as ratios, and the latter in bytes.
 */
static void bench_zero_only(void)
{
	double full_ns, full_b, zero_ns, zero_b;

	if (ksm_read("zero_pages_only") < 0)
		return;
	printf("# zero_only: 65536 unique pages, full mode and zero only\n");
	/* Zero only first: it frees nothing the other's slab figure sees. */
	if (!zero_only_cost(1, &zero_ns, &zero_b) ||
	    !zero_only_cost(0, &full_ns, &full_b))
		return;
	metric("zero_only_scan_vs_full", zero_ns / full_ns, "ratio");
	metric("zero_only_metadata", zero_b, "B/page");
	if (full_b > 0)
		metric("zero_only_metadata_vs_full", zero_b / full_b, "ratio");
}

/*
 * The pages saved (pages_sharing + ksm_zero_pages) once merging is at a
 * steady state: a full scan adds nothing, VM_SCANS scans after full scan
 * @from at least; -1 if a scan timed out.
 */
static long merged_steady(long from)
{
	long scans = from, saved = -1, last;

	do {
		last = saved;
		if (!wait_scans_until(++scans))
			return -1;
		saved = ksm_read("pages_sharing") + ksm_read("ksm_zero_pages");
	} while (scans < from + VM_SCANS || saved != last);
	return saved;
}

/*
 * One workload under estimate, then merged for real: the saving estimate's
 * last complete pass counted (estimated_pages_sharing + estimated_zero_pages)
 * into *@est, ksmd's CPU per page scanned in estimate mode over
 * MEASURE_SCANS full scans into *@ns, and the saving the merge then makes
 * (pages_sharing + ksm_zero_pages, once a full scan adds nothing) into
 * *@real. False on failure.
 */
static bool estimate_then_merge(struct job *job, int kids, const char *name,
				double *est, double *ns, double *real)
{
	long scans, saved;
	struct sample a, b;
	bool ok = false;
	struct kids k;

	if (!reset() || ksm_write("estimate", 1) ||
	    !start_kids(&k, kids, job))
		return false;
	scans = ksm_read("full_scans");
	if (!call_all(&k, 'm')) {
		fail("%s: madvise failed", name);
		goto out;
	}
	/* Two complete passes make the estimate; measure the next ones. */
	if (!wait_scans_until(scans + 3))
		goto out;
	sample(&a);
	prof_begin();
	if (!wait_scans_until(a.scans + MEASURE_SCANS))
		goto out;
	sample(&b);
	prof_end(name);
	*ns = ns_per_page(&a, &b);
	*est = ksm_read("estimated_pages_sharing") +
	       ksm_read("estimated_zero_pages");
	if (ksm_read("pages_sharing") || ksm_read("pages_shared"))
		fail("%s: merged under estimate", name);
	if (ksm_write("estimate", 0))
		goto out;
	saved = merged_steady(b.scans);
	if (saved < 0)
		goto out;
	*real = saved;
	ok = true;
out:
	stop_kids(&k);
	ksm_write("estimate", 0);
	ksm_write("run", 2);
	return ok;
}

/*
 * estimate (samepage's; nothing on stock): what it says a workload would
 * save, over what merging it then saves, for the clones, VM-like memory on
 * huge pages and unique pages (which would save nothing); and its ksmd CPU
 * per page scanned on the unique pages over the full mode's.
 */
static void bench_estimate(void)
{
	struct job clones = { CLONE_PAGES, FILL_CLONE, false };
	struct job vmlike = { VM_PAGES, FILL_VMLIKE, true };
	struct job unique = { 65536, FILL_UNIQUE, false };
	double est, ns, real, full_ns, full_b;

	if (ksm_read("estimate") < 0)
		return;
	printf("# estimate: clones, thp_vmlike, 65536 unique pages\n");
	if (estimate_then_merge(&clones, CLONE_KIDS, "estimate_clones", &est,
				&ns, &real) && real > 0)
		metric("estimate_clones_vs_real", est / real, "ratio");
	if (estimate_then_merge(&vmlike, VM_KIDS, "estimate_vmlike", &est,
				&ns, &real) && real > 0)
		metric("estimate_vmlike_vs_real", est / real, "ratio");
	if (!estimate_then_merge(&unique, 1, "estimate_unique", &est, &ns,
				 &real))
		return;
	metric("estimate_unique_pages", est, "pages");
	metric("estimate_unique_real", real, "pages");
	if (zero_only_cost(0, &full_ns, &full_b) && full_ns > 0)
		metric("estimate_scan_vs_full", ns / full_ns, "ratio");
}

/* What hide_run() measures of one workload. */
struct hide_figures {
	double saved;	/* pages_sharing + ksm_zero_pages at the steady state */
	double cpu;	/* ksmd's CPU seconds from madvise to it */
	double touch;	/* the writers' CPU per page of the first writes, ns */
};

/*
 * @job in @kids children merged to a steady state, with hide_merges set
 * to @hide, then written once a page: into *@f. False on failure.
 */
static bool hide_run(struct job *job, int kids, bool hide, const char *name,
		     struct hide_figures *f)
{
	long saved;
	double t, touch = 0;
	struct sample a, b;
	bool ok = false;
	struct kids k;

	if (!reset() || ksm_write("run", 2) ||
	    (hide && ksm_write("hide_merges", 1)) || ksm_write("run", 1) ||
	    !start_kids(&k, kids, job))
		goto out_settings;
	sample(&a);
	if (!call_all(&k, 'm')) {
		fail("%s: madvise failed", name);
		goto out;
	}
	saved = merged_steady(a.scans);
	if (saved < 0)
		goto out;
	sample(&b);
	f->saved = saved;
	f->cpu = cpu_seconds(&a, &b);
	for (int i = 0; i < kids; i++) {
		if (call(&k, i, 'W', &t) != 'k') {
			fail("%s: writes failed", name);
			goto out;
		}
		touch += t;
	}
	f->touch = touch * 1e9 / ((double)kids * job->pages);
	ok = true;
out:
	stop_kids(&k);
out_settings:
	ksm_write("run", 2);
	ksm_write("hide_merges", 0);
	return ok;
}

/* One workload of bench_hide(): its figures without hide_merges, and with. */
static void hide_compare(struct job *job, int kids, const char *name,
			 bool hide)
{
	struct hide_figures off, on;
	char m[64];

	if (!hide_run(job, kids, false, name, &off))
		return;
	snprintf(m, sizeof(m), "hide_off_%s_saved", name);
	metric(m, off.saved, "pages");
	snprintf(m, sizeof(m), "hide_off_%s_cpu", name);
	metric(m, off.cpu, "s");
	snprintf(m, sizeof(m), "hide_off_%s_touch", name);
	metric(m, off.touch, "ns/page");
	if (!hide || !hide_run(job, kids, true, name, &on))
		return;
	if (off.saved > 0) {
		snprintf(m, sizeof(m), "hide_%s_saved_vs_off", name);
		metric(m, on.saved / off.saved, "ratio");
	}
	if (off.cpu > 0) {
		snprintf(m, sizeof(m), "hide_%s_cpu_vs_off", name);
		metric(m, on.cpu / off.cpu, "ratio");
	}
	if (off.touch > 0) {
		snprintf(m, sizeof(m), "hide_%s_touch_vs_off", name);
		metric(m, on.touch / off.touch, "ratio");
	}
}

/*
 * hide_merges (samepage's): what merging that no process can observe
 * saves and costs, against merging without it, on the clones, the
 * VM-like memory on huge pages and unique pages. Stock measures the
 * figures without it, which make test-stock's ratios.
 */
static void bench_hide(void)
{
	struct job clones = { CLONE_PAGES, FILL_CLONE, false };
	struct job vmlike = { VM_PAGES, FILL_VMLIKE, true };
	struct job unique = { 16384, FILL_UNIQUE, false };
	bool hide = ksm_read("hide_merges") >= 0;

	printf("# hide: clones, thp_vmlike, 16384 unique pages\n");
	hide_compare(&clones, CLONE_KIDS, "clones", hide);
	hide_compare(&vmlike, VM_KIDS, "vmlike", hide);
	hide_compare(&unique, 1, "unique", hide);
}

/* ksmd's CPU seconds over @seconds of guest time from now. */
static double ksmd_cpu_over(double seconds)
{
	struct sample a, b;

	sample(&a);
	while (monotonic_seconds() - a.t < seconds)
		usleep(100000);
	sample(&b);
	return cpu_seconds(&a, &b);
}

/*
 * pressure_only (samepage's; nothing on stock) on an idle host: 64k unique
 * pages registered and scanned to a steady state at mainline's default
 * pace (pages_to_scan 100, sleep_millisecs 20, smart_scan 1), then ksmd's
 * CPU over PRESSURE_IDLE_S guest seconds with run=1 and with pressure_only
 * and nothing short, scaled to an hour, and their ratio.
 */
static void bench_pressure(void)
{
	struct job job = { 65536, FILL_UNIQUE, false };
	double run_cpu, idle_cpu;
	struct kids k;
	long scans;

	if (ksm_read("pressure_only") < 0)
		return;
	printf("# pressure: 65536 idle unique pages, run=1 and pressure_only\n");
	if (!reset() || ksm_write("pages_to_scan", 100) ||
	    ksm_write("sleep_millisecs", 20) || ksm_write("smart_scan", 1) ||
	    !start_kids(&k, 1, &job))
		return;
	scans = ksm_read("full_scans");
	if (call(&k, 0, 'm', NULL) != 'k') {
		fail("pressure: madvise failed");
		goto out;
	}
	if (!wait_scans_until(scans + 2))
		goto out;
	run_cpu = ksmd_cpu_over(PRESSURE_IDLE_S);
	if (ksm_write("pressure_only", 1))
		goto out;
	idle_cpu = ksmd_cpu_over(PRESSURE_IDLE_S);
	if (ksm_read("pressure_level"))
		fail("pressure: level %ld on an idle guest",
		     ksm_read("pressure_level"));
	metric("pressure_idle_run_cpu", run_cpu * 3600 / PRESSURE_IDLE_S,
	       "s/h");
	metric("pressure_idle_cpu", idle_cpu * 3600 / PRESSURE_IDLE_S, "s/h");
	if (run_cpu > 0)
		metric("pressure_idle_vs_run", idle_cpu / run_cpu, "ratio");
out:
	ksm_write("pressure_only", 0);
	stop_kids(&k);
	ksm_write("run", 2);
}

static void bench_volatile(void)
{
	struct job job = { VOLATILE_PAGES, FILL_VOLATILE, false };
	struct sample a, b;
	struct kids k;
	long scans;

	printf("# volatile: %d pages\n", VOLATILE_PAGES);
	if (!reset() || !start_kids(&k, 1, &job))
		return;
	scans = ksm_read("full_scans");
	if (call(&k, 0, 'v', NULL) != 'k')
		fail("volatile: madvise failed");
	if (wait_scans_until(scans + 1)) {
		sample(&a);
		prof_begin();
		if (wait_scans_until(a.scans + MEASURE_SCANS)) {
			sample(&b);
			prof_end("volatile");
			metric("volatile_scan", ns_per_page(&a, &b),
			       "ns/page");
			metric("volatile_merged",
			       ksm_read("pages_sharing") +
			       ksm_read("pages_shared"), "pages");
		}
	}
	if (ksm_read("pages_sharing"))
		fail("volatile: %ld pages merged", ksm_read("pages_sharing"));
	stop_kids(&k);
}

/* The writer's CPU over @sweeps sweeps, @period full scans apart. */
static double writer_sweeps(struct kids *k, int sweeps, int period)
{
	double t, sum = 0;

	for (int s = 0; s < sweeps; s++) {
		if (period && !wait_scans_until(ksm_read("full_scans") + period))
			return -1;
		if (call(k, 0, 'W', &t) != 'k')
			return -1;
		sum += t;
	}
	return sum;
}

static void bench_writer(const char *kind, bool huge, int period)
{
	struct job job = { WRITER_PAGES, FILL_UNIQUE, huge };
	double off, on, extra;
	struct sample a, b;
	char name[64];
	struct kids k;
	long passes;

	printf("# writer: %s pages, every %d full scans\n", kind, period);
	if (!reset())
		return;
	if (ksm_write("run", 0)) {
		fail("writer: cannot stop ksmd");
		return;
	}
	if (!start_kids(&k, 1, &job))
		return;
	if (call(&k, 0, 'm', NULL) != 'k') {
		fail("writer: madvise failed");
		goto out;
	}
	off = writer_sweeps(&k, WRITER_SWEEPS, 0);
	ksm_write("run", 1);
	sample(&a);
	on = writer_sweeps(&k, WRITER_SWEEPS, period);
	sample(&b);
	passes = b.scans - a.scans;
	if (off <= 0 || on < 0 || passes <= 0) {
		fail("writer: no measure (off %f, on %f)", off, on);
		goto out;
	}
	extra = on - off;
	snprintf(name, sizeof(name), "writer_%s_p%d_cost", kind, period);
	metric(name, on / off, "x");
	snprintf(name, sizeof(name), "writer_%s_p%d_total", kind, period);
	metric(name, (cpu_seconds(&a, &b) + extra) * 1e9 /
	       ((double)WRITER_PAGES * passes), "ns/page/scan");
	if (ksm_read("pages_sharing"))
		fail("writer: %ld pages merged", ksm_read("pages_sharing"));
out:
	stop_kids(&k);
}

static void bench_writers(void)
{
	static const int periods[] = { 1, 2, 4, 16 };

	for (size_t i = 0; i < ARRAY_SIZE(periods); i++) {
		bench_writer("small", false, periods[i]);
		bench_writer("huge", true, periods[i]);
	}
}

/*
 * Scale: what a process's mappings cost. A KSM page's sharers forked and
 * killed, a mapping split into many VMAs migrated, a large merged mm
 * exiting.
 */

#define SCALE_PAGES	256	/* equal pages the fork-kill parent merges */
#define MIGRATE_SAMPLE	32	/* KSM pages moved in each migrate row */
#define EXIT_MERGE_SCANS 20	/* full scans the exit row's pairs may take */
#define MPOL_DEFAULT	0
#define MPOL_BIND	2
#define MPOL_MF_MOVE_ALL (1 << 2)

/*
 * fork_kill_N_recover: a parent merges SCALE_PAGES equal pages into one KSM
 * page and forks @kids children that pause; once ksmd has seen them all
 * they are killed and reaped, and the row is the guest time from then
 * until ksmd completes two full scans.
 */
static void bench_fork_kill(int kids, const char *name)
{
	long all = (long)SCALE_PAGES * (kids + 1) - 1, f;
	pid_t *pid = calloc(kids, sizeof(*pid));
	char *p = map_pages(SCALE_PAGES);
	int started = 0;
	double t;

	printf("# fork_kill: %d children\n", kids);
	if (!pid || !reset())
		goto out;
	fill_unique(p, SCALE_PAGES, 3, SCALE_PAGES);
	if (merge_pages(p, SCALE_PAGES) ||
	    !ksm_wait_counter("pages_sharing", SCALE_PAGES - 1)) {
		fail("%s: the parent's pages did not merge", name);
		goto out;
	}
	started = fork_paused(pid, kids);
	if (started != kids || !ksm_wait_counter("pages_sharing", all)) {
		fail("%s: %d children, pages_sharing %ld of %ld", name,
		     started, ksm_read("pages_sharing"), all);
		goto out;
	}
	kill_all(pid, started);
	started = 0;
	prof_begin();
	t = monotonic_seconds();
	f = ksm_read("full_scans");
	if (wait_scans_until(f + 2)) {
		metric(name, monotonic_seconds() - t, "s");
		prof_end(name);
	}
out:
	kill_all(pid, started);
	munmap(p, SCALE_PAGES * page_size);
	free(pid);
}

static bool self_merged(void *want)
{
	return self_merging_pages() == *(long *)want;
}

/*
 * migrate_N_vmas: @vmas pages on node 0, pages 2k and 2k+1 alike, split
 * by mprotect() into one-page VMAs of one anon_vma and merged; with ksmd
 * stopped, guest ns per KSM page moved to node 1 by move_pages().
 */
static void bench_migrate(long vmas, const char *name)
{
	size_t len = vmas * page_size, stride = vmas / 2 / MIGRATE_SAMPLE;
	void *pages[MIGRATE_SAMPLE];
	int nodes[MIGRATE_SAMPLE], st[MIGRATE_SAMPLE];
	unsigned long node0 = 1;
	char *p;
	long ret;
	double t;

	printf("# migrate: %ld VMAs\n", vmas);
	if (!reset())
		return;
	syscall(__NR_set_mempolicy, MPOL_BIND, &node0, 2);
	p = map_pages(vmas);
	syscall(__NR_set_mempolicy, MPOL_DEFAULT, NULL, 0);
	fill_unique(p, vmas, 4, 2);
	merge_pages(p, vmas);
	for (long i = 1; i < vmas; i += 2)
		mprotect(p + i * page_size, page_size, PROT_READ);
	if (!ksm_wait_until(self_merged, &vmas, 20)) {
		fail("%s: %ld of %ld pages merged", name, self_merging_pages(),
		     vmas);
		goto out;
	}
	ksm_write("run", 0);
	for (int k = 0; k < MIGRATE_SAMPLE; k++) {
		pages[k] = p + 2 * k * stride * page_size;
		nodes[k] = 1;
	}
	t = monotonic_seconds();
	ret = syscall(__NR_move_pages, 0, MIGRATE_SAMPLE, pages, nodes, st,
		      MPOL_MF_MOVE_ALL);
	t = monotonic_seconds() - t;
	if (ret || st[0] != 1 || st[MIGRATE_SAMPLE - 1] != 1)
		fail("%s: move_pages %ld, status %d", name, ret, st[0]);
	else
		metric(name, t * 1e9 / MIGRATE_SAMPLE, "ns/page");
out:
	munmap(p, len);
}

/*
 * Wait until ksmd has forgotten every page: nothing else is registered,
 * so ksmd scans only while what it must forget is left.
 */
static bool wait_forgotten(void)
{
	double deadline = monotonic_seconds() + WAIT_LIMIT;

	while (tracked_pages()) {
		if (monotonic_seconds() > deadline) {
			fail("timed out: %ld pages still tracked",
			     tracked_pages());
			return false;
		}
		usleep(10000);
	}
	return true;
}

/*
 * exit_4g_reap, exit_4g_forget: a child holding @pages pages, pages 2k and
 * 2k+1 alike, locked in memory and all merged, is killed: the guest time
 * until it is reaped,
 * then until ksmd has forgotten all of them (much of it while the child
 * is torn down: ksmd runs beside the exit).
 */
static void bench_exit(size_t pages, const char *name)
{
	double t0, t1;
	pid_t pid;
	char metric_name[64];
	long f;
	int fds[2];
	char c;

	printf("# exit: %zu pages\n", pages);
	if (!reset() || pipe(fds))
		return;
	pid = fork();
	if (!pid) {
		char *p = map_pages(pages);

		fill_unique(p, pages, 5, 2);
		/* Locked: a page pushed out to swap would never merge. */
		c = mlock(p, pages * page_size) || merge_pages(p, pages) ?
		    'e' : 'r';
		if (write(fds[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &c, 1) != 1 || c != 'r') {
		fail("%s: the child did not start", name);
		goto out;
	}
	f = ksm_read("full_scans");
	while (ksm_stat(pid, "ksm_merging_pages") != (long)pages)
		if (ksm_read("full_scans") > f + EXIT_MERGE_SCANS ||
		    !wait_scans_until(ksm_read("full_scans") + 1)) {
			fail("%s: %ld of %zu pages merged after %ld scans (shared %ld sharing %ld unshared %ld)",
			     name, ksm_stat(pid, "ksm_merging_pages"), pages,
			     ksm_read("full_scans") - f,
			     ksm_read("pages_shared"),
			     ksm_read("pages_sharing"),
			     ksm_read("pages_unshared"));
			goto out;
		}
	prof_begin();
	t0 = monotonic_seconds();
	kill_all(&pid, 1);
	pid = 0;
	t1 = monotonic_seconds();
	snprintf(metric_name, sizeof(metric_name), "%s_reap", name);
	metric(metric_name, t1 - t0, "s");
	/* One profile of both: ksmd forgets while the mm is torn down. */
	if (wait_forgotten()) {
		snprintf(metric_name, sizeof(metric_name), "%s_forget", name);
		metric(metric_name, monotonic_seconds() - t1, "s");
		prof_end(name);
	}
out:
	if (pid > 0)
		kill_all(&pid, 1);
	close(fds[0]);
}

/*
 * Whether to run the workloads named @name: all of them, unless
 * SAMEPAGE_BENCH_ROWS (make bench ROWS=) lists names, comma-separated,
 * one of which @name contains.
 */
static bool row(const char *name)
{
	const char *rows = getenv("SAMEPAGE_BENCH_ROWS");
	char buf[256], *tok, *save;

	if (!rows || !*rows)
		return true;
	snprintf(buf, sizeof(buf), "%s", rows);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (strstr(name, tok))
			return true;
	return false;
}

int main(void)
{
	double t0 = monotonic_seconds();
	bool big = meminfo_kb("MemTotal") > 5L << 20;

	clk_tck = sysconf(_SC_CLK_TCK);
	printf("# ksm_bench: page size %zu, clock ticks %ld/s, ksmd pid %d\n",
	       page_size, clk_tck, ksmd_pid());
	if (!ksmd_pid() || ksm_read("run") < 0) {
		fail("no ksmd or no %s", KSM_DIR);
	} else {
		if (row("clones"))
			bench_clones();
		if (row("unique")) {
			bench_unique(16384, "16k", false);
			bench_unique(65536, "64k", false);
			bench_unique(262144, "256k", false);
			/* 4 GiB of pages: only in a guest that has room for them. */
			if (big)
				bench_unique(1048576, "1m", false);
		}
		if (row("thp")) {
			bench_unique(65536, "64k_thp", true);
			bench_clones_thp();
			bench_thp_vmlike();
			bench_thp_changing();
		}
		if (row("request"))
			bench_request();
		if (row("writer"))
			bench_writers();
		if (row("volatile"))
			bench_volatile();
		if (row("zero_only"))
			bench_zero_only();
		if (row("estimate"))
			bench_estimate();
		if (row("pressure"))
			bench_pressure();
		if (row("hide"))
			bench_hide();
		if (row("fork_kill")) {
			bench_fork_kill(400, "fork_kill_400_recover");
			bench_fork_kill(2000, "fork_kill_2000_recover");
		}
		if (row("migrate") &&
		    !access("/sys/devices/system/node/node1", F_OK)) {
			bench_migrate(2048, "migrate_2k_vmas");
			bench_migrate(16384, "migrate_16k_vmas");
		}
		if (row("exit") && big)
			bench_exit(1048576, "exit_4g");
		ksm_write("run", 2);
	}
	metric("bench_guest_time", monotonic_seconds() - t0, "s");
	printf("bench done errors=%d\n", errors);
	return errors ? 1 : 0;
}
