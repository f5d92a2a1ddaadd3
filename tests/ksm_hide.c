// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_hide.c - hide_merges (samepage's): every page that holds still
 * becomes a KSM page, merged or not, and a process's views of its own
 * pages do not tell which. ksm_observe.c guesses through each view; this
 * checks the mechanism and the setting's rules:
 *
 *   hide_every_page_ksm: NPAIRS pairs of equal pages and NUNIQ unique
 *     ones in one process: every page comes to map a KSM page
 *     (ksm_merging_pages), each pair one frame and each unique page its
 *     own, root's pages_sharing counts the pairs alone; pagemap shows
 *     every page exclusively mapped and smaps no Shared_ line; the first
 *     access to any page copies it (cow_ksm, once a page at least), and
 *     every page holds its
 *     content through all of it.
 *   hide_charged_per_mapping: NBIG unique pages of a process in a memory
 *     cgroup all become KSM pages, whose frames are the root cgroup's, but
 *     the cgroup's memory.current does not fall (each mapping is charged
 *     a page, shown as kernel memory in memory.stat), within CHARGE_SLACK
 *     pages of per-CPU charge batches; the pages hold their content, and
 *     once read (each a copy) are not charged twice.
 *   hide_read_copies: where the kernel has NUMA balancing (whose
 *     PROT_NONE PTEs hide a KSM page from every access), a read of the
 *     first page of each merged pair takes a fault (RUSAGE minflt) and a
 *     private frame: no pair shares a frame afterwards, and every page
 *     holds its content.
 *   hide_counters_root_only: with hide_merges=1, pages_sharing is mode
 *     0400 and a process of uid 1001 can neither open it nor read it
 *     through a descriptor it opened before the setting; full_scans
 *     stays readable; with hide_merges=0 again, mode 0444.
 *   hide_request: MADV_MERGE returns 0 at once and merges nothing; ksmd
 *     then merges the range.
 *   hide_busy_and_bad_input: EBUSY while a KSM page exists, EINVAL for
 *     2 and "x", the value unchanged each time; accepted after run=2.
 *   hide_uffd_wp: merged pairs under userfaultfd write-protection, ksmd
 *     paused: the first page of each pair is read (a copy, where NUMA
 *     balancing is built), then a thread writes every page, and each
 *     write faults to the monitor (a WP fault at that page) before it
 *     goes on: a copy keeps the protection of the page it copies. Every
 *     page holds its content and the write.
 *
 * hide_merges is samepage's: every test skips on stock.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#ifndef MADV_MERGE
#define MADV_MERGE	26
#endif

#define NPAIRS		32
#define NUNIQ		32
#define SEED		0x41de
#define PM_MMAP_EXCLUSIVE	(1ULL << 56)
#define NBIG		1024
#define CHARGE_SLACK	256
#define CG		CGROUP_ROOT "/ksm_hide"
#define WP_MARK		0x5a5a5a5a5a5a5a5aULL

static const char *const names[] = {
	"hide_every_page_ksm", "hide_charged_per_mapping", "hide_read_copies",
	"hide_counters_root_only", "hide_request", "hide_busy_and_bad_input",
	"hide_uffd_wp",
};

/* run=2, hide_merges=@v, run=1: 0 or -errno of the first write failing. */
static int set_hide(int v)
{
	int err = ksm_write("run", 2);

	if (!err)
		err = ksm_write("hide_merges", v);
	if (!err)
		err = ksm_write("run", 1);
	return err;
}

/* The pages of [@p, @p + @n pages) whose pagemap entry says exclusive. */
static int exclusive_pages(const char *p, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += !!(pagemap_entry(0, p + i * page_size) & PM_MMAP_EXCLUSIVE);
	return k;
}

/* Do the unique pages of @u all have frames of their own? */
static bool frames_distinct(const char *u, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (page_pfn(u + i * page_size) ==
			    page_pfn(u + j * page_size))
				return false;
	return true;
}

static bool uniq_hold(const char *u, int n)
{
	static char want[1 << 16];

	for (int i = 0; i < n; i++) {
		fill_pattern(want, SEED + 1, i);
		if (memcmp(u + i * page_size, want, page_size))
			return false;
	}
	return true;
}

static void test_every_page_ksm(void)
{
	char *p = map_pairs(NPAIRS, SEED), *u = map_pages(NUNIQ);
	long cow;

	for (int i = 0; i < NUNIQ; i++)
		fill_pattern(u + i * page_size, SEED + 1, i);
	CHECK(set_hide(1) == 0, "hide_merges=1");
	CHECK(merge_pages(p, 2 * NPAIRS) == 0 && merge_pages(u, NUNIQ) == 0,
	      "madvise");
	CHECK(ksm_wait_counter("pages_sharing", NPAIRS), "pairs merge");
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_stat(0, "ksm_merging_pages") == 2 * NPAIRS + NUNIQ,
	      "every page maps a KSM page (%ld)",
	      ksm_stat(0, "ksm_merging_pages"));
	CHECK(ksm_read("pages_sharing") == NPAIRS &&
	      ksm_read("pages_shared") == NPAIRS + NUNIQ,
	      "root sees pages_sharing %ld, pages_shared %ld",
	      ksm_read("pages_sharing"), ksm_read("pages_shared"));
	CHECK(pairs_shared(p, NPAIRS) == NPAIRS && frames_distinct(u, NUNIQ),
	      "each pair one frame (%d), each unique page its own",
	      pairs_shared(p, NPAIRS));
	CHECK(exclusive_pages(p, 2 * NPAIRS) == 2 * NPAIRS &&
	      exclusive_pages(u, NUNIQ) == NUNIQ,
	      "pagemap: every page exclusive (%d, %d)",
	      exclusive_pages(p, 2 * NPAIRS), exclusive_pages(u, NUNIQ));
	CHECK(smaps_kb(0, p, "Shared_Clean") == 0 &&
	      smaps_kb(0, p, "Shared_Dirty") == 0 &&
	      smaps_kb(0, p, "KSM") >= (long)(2 * NPAIRS * page_size / 1024),
	      "smaps: no Shared_, KSM %ld kB", smaps_kb(0, p, "KSM"));
	/* A copy at the first access: a read where NUMA balancing is built. */
	cow = vmstat("cow_ksm");
	CHECK(pairs_hold(p, NPAIRS, SEED) && uniq_hold(u, NUNIQ), "content");
	for (int i = 0; i < 2 * NPAIRS; i++)
		((volatile char *)p)[i * page_size + 1] ^= 0;
	for (int i = 0; i < NUNIQ; i++)
		((volatile char *)u)[i * page_size + 1] ^= 0;
	/* At least: ksmd may merge the copies again meanwhile. */
	CHECK(vmstat("cow_ksm") - cow >= 2 * NPAIRS + NUNIQ,
	      "every first access copies (%ld)", vmstat("cow_ksm") - cow);
	CHECK(pairs_hold(p, NPAIRS, SEED) && uniq_hold(u, NUNIQ),
	      "content after the writes");
	munmap(p, 2 * NPAIRS * page_size);
	munmap(u, NUNIQ * page_size);
	CHECK(set_hide(0) == 0, "hide_merges=0");
	ktap_result(checks_passed(), "%s", names[0]);
}

/* Move this process to cgroup @cg. */
static int join_cgroup(const char *cg)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	return write_file(path, "0");
}

static void test_charged_per_mapping(void)
{
	long before, after, kernel;
	char *u;

	if (memcg_create(CG) || join_cgroup(CG)) {
		ktap_skip_named(names[1], "no memory cgroups");
		return;
	}
	u = map_pages(NBIG);
	for (int i = 0; i < NBIG; i++)
		fill_pattern(u + i * page_size, SEED + 1, i);
	kernel = key_value(CG "/memory.stat", "kernel");
	before = read_long(CG "/memory.current");
	CHECK(set_hide(1) == 0 && merge_pages(u, NBIG) == 0,
	      "hide_merges=1, madvise");
	CHECK(ksm_wait_counter("pages_shared", NBIG), "every page KSM");
	after = read_long(CG "/memory.current");
	CHECK(ksm_stat(0, "ksm_merging_pages") == NBIG,
	      "ksm_merging_pages %ld", ksm_stat(0, "ksm_merging_pages"));
	CHECK(after >= before - CHARGE_SLACK * (long)page_size,
	      "memory.current %ld, was %ld", after, before);
	CHECK(key_value(CG "/memory.stat", "kernel") - kernel >=
	      (long)((NBIG - CHARGE_SLACK) * page_size),
	      "kernel memory grew by %ld",
	      key_value(CG "/memory.stat", "kernel") - kernel);
	CHECK(uniq_hold(u, NBIG), "content");
	/* The reads took copies: their charge replaced the mappings'. */
	CHECK(read_long(CG "/memory.current") <=
	      before + CHARGE_SLACK * (long)page_size,
	      "memory.current %ld after the reads, was %ld",
	      read_long(CG "/memory.current"), before);
	munmap(u, NBIG * page_size);
	CHECK(join_cgroup(CGROUP_ROOT) == 0 && set_hide(0) == 0,
	      "back to the root cgroup, hide_merges=0");
	cgroup_remove(CG);
	ktap_result(checks_passed(), "%s", names[1]);
}

static void test_read_copies(void)
{
	char *p = map_pairs(NPAIRS, SEED + 4);
	long faults;
	char sum = 0;

	if (access("/proc/sys/kernel/numa_balancing", F_OK)) {
		ktap_skip_named(names[2], "no NUMA balancing");
		munmap(p, 2 * NPAIRS * page_size);
		return;
	}
	CHECK(set_hide(1) == 0 && merge_pages(p, 2 * NPAIRS) == 0,
	      "hide_merges=1, madvise");
	CHECK(ksm_wait_counter("pages_sharing", NPAIRS), "pairs merge");
	CHECK(pairs_shared(p, NPAIRS) == NPAIRS, "pairs share frames");
	/* Stopped, so that ksmd does not merge the copies again. */
	CHECK(ksm_write("run", 0) == 0, "run=0");
	faults = minor_faults();
	for (int i = 0; i < NPAIRS; i++)
		sum += ((volatile char *)p)[2 * i * page_size + 5];
	faults = minor_faults() - faults;
	CHECK(faults >= NPAIRS, "%ld faults for %d first reads (%d)", faults,
	      NPAIRS, sum);
	CHECK(pairs_shared(p, NPAIRS) == 0,
	      "each read page has a frame of its own (%d pairs share)",
	      pairs_shared(p, NPAIRS));
	CHECK(pairs_hold(p, NPAIRS, SEED + 4), "content");
	munmap(p, 2 * NPAIRS * page_size);
	CHECK(set_hide(0) == 0, "hide_merges=0");
	ktap_result(checks_passed(), "%s", names[2]);
}

/*
 * As uid 1001: 0 if pages_sharing can neither be opened nor read through
 * @fd (opened before), and full_scans can be read; else a line number.
 */
static int unprivileged_reads(int fd)
{
	char buf[32];

	if (setgid(1001) || setuid(1001))
		return __LINE__;
	if (read(fd, buf, sizeof(buf)) >= 0 || errno != EACCES)
		return __LINE__;
	if (open(KSM_DIR "pages_sharing", O_RDONLY) >= 0 || errno != EACCES)
		return __LINE__;
	if (ksm_read("full_scans") < 0)
		return __LINE__;
	return 0;
}

static void test_counters_root_only(void)
{
	int fd = open(KSM_DIR "pages_sharing", O_RDONLY);
	int to_kid[2], status = -1;
	struct stat st;
	pid_t pid;
	char c;

	CHECK(fd >= 0 && pipe(to_kid) == 0, "open, pipe");
	pid = fork();
	if (pid == 0) {
		/* Wait for the parent to set hide_merges. */
		if (read(to_kid[0], &c, 1) != 1)
			_exit(1);
		_exit(unprivileged_reads(fd));
	}
	CHECK(set_hide(1) == 0, "hide_merges=1");
	CHECK(stat(KSM_DIR "pages_sharing", &st) == 0 &&
	      (st.st_mode & 0777) == 0400, "mode 0%o", st.st_mode & 0777);
	CHECK(write(to_kid[1], "g", 1) == 1 && waitpid(pid, &status, 0) == pid,
	      "child");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "uid 1001 reads: failed at line %d", WEXITSTATUS(status));
	CHECK(ksm_read("pages_sharing") >= 0, "root reads it");
	CHECK(set_hide(0) == 0, "hide_merges=0");
	CHECK(stat(KSM_DIR "pages_sharing", &st) == 0 &&
	      (st.st_mode & 0777) == 0444, "mode 0%o after", st.st_mode & 0777);
	close(fd);
	close(to_kid[0]);
	close(to_kid[1]);
	ktap_result(checks_passed(), "%s", names[3]);
}

static void test_request(void)
{
	char *p = map_pairs(NPAIRS, SEED + 2);

	/*
	 * ksmd sleeps long between passes, so that it cannot visit the
	 * range twice before the check: a page merges at its second visit.
	 */
	CHECK(set_hide(1) == 0 && ksm_write("sleep_millisecs", 60000) == 0,
	      "hide_merges=1, ksmd slow");
	CHECK(madvise(p, 2 * NPAIRS * page_size, MADV_MERGE) == 0,
	      "MADV_MERGE: 0");
	CHECK(ksm_stat(0, "ksm_merging_pages") == 0 &&
	      pairs_shared(p, NPAIRS) == 0,
	      "nothing merged by the request (%ld)",
	      ksm_stat(0, "ksm_merging_pages"));
	CHECK(ksm_write("sleep_millisecs", 0) == 0 &&
	      ksm_wait_counter("pages_sharing", NPAIRS), "ksmd merges it");
	CHECK(pairs_shared(p, NPAIRS) == NPAIRS && pairs_hold(p, NPAIRS,
							      SEED + 2),
	      "merged, content");
	munmap(p, 2 * NPAIRS * page_size);
	CHECK(set_hide(0) == 0, "hide_merges=0");
	ktap_result(checks_passed(), "%s", names[4]);
}

static void test_busy_and_bad_input(void)
{
	static const char *const bad[] = { "2", "x" };
	char *p = map_pairs(NPAIRS, SEED + 3);

	CHECK(merge_pages(p, 2 * NPAIRS) == 0, "madvise");
	CHECK(ksm_wait_counter("pages_sharing", NPAIRS), "pairs merge");
	CHECK(ksm_write("hide_merges", 1) == -EBUSY &&
	      ksm_read("hide_merges") == 0, "EBUSY with KSM pages, unchanged");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(ksm_write_str("hide_merges", bad[i]) == -EINVAL &&
		      ksm_read("hide_merges") == 0,
		      "\"%s\": EINVAL, unchanged", bad[i]);
	CHECK(pairs_hold(p, NPAIRS, SEED + 3), "content");
	CHECK(set_hide(1) == 0 && ksm_read("hide_merges") == 1,
	      "accepted after run=2");
	CHECK(set_hide(0) == 0, "hide_merges=0");
	munmap(p, 2 * NPAIRS * page_size);
	ktap_result(checks_passed(), "%s", names[5]);
}

/* The writer of hide_uffd_wp: the first word of each of @n pages. */
struct wp_writer {
	char *p;
	int n;
	atomic_int done;
};

static void *wp_write(void *arg)
{
	struct wp_writer *w = arg;

	for (int i = 0; i < w->n; i++)
		*(volatile uint64_t *)(w->p + i * page_size) = WP_MARK;
	atomic_store(&w->done, 1);
	return NULL;
}

static int uffd_protect(int uffd, char *p, size_t len, bool protect)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
}

/* A userfaultfd with write-protect faults, or -1 (the test skipped). */
static int uffd_wp_open(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd >= 0 && !ioctl(uffd, UFFDIO_API, &api) &&
	    (api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP))
		return uffd;
	if (uffd >= 0)
		close(uffd);
	ktap_skip_named(names[6], "no userfaultfd write-protection");
	return -1;
}

/*
 * Serve the WP faults of @w's pages until it is done, or 60 s: count each
 * page's in @faults, and take the protection off the page. Returns the
 * faults that were not WP faults of a page of @w.
 */
static int wp_serve(int uffd, struct wp_writer *w, int *faults)
{
	double deadline = monotonic_seconds() + 60;
	int stray = 0;

	while (!atomic_load(&w->done) && monotonic_seconds() < deadline) {
		struct pollfd pfd = { .fd = uffd, .events = POLLIN };
		struct uffd_msg msg;
		uintptr_t addr;
		long i;

		if (poll(&pfd, 1, 100) <= 0 ||
		    read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		addr = msg.arg.pagefault.address & ~(uintptr_t)(page_size - 1);
		i = (long)(addr - (uintptr_t)w->p) / (long)page_size;
		if (msg.event != UFFD_EVENT_PAGEFAULT ||
		    !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) ||
		    i < 0 || i >= w->n) {
			stray++;
			continue;
		}
		faults[i]++;
		uffd_protect(uffd, (char *)addr, page_size, false);
	}
	if (!atomic_load(&w->done))
		uffd_protect(uffd, w->p, w->n * page_size, false);
	return stray;
}

/* Does every page of @w hold its pair's pattern but for the first word? */
static bool wp_content(const struct wp_writer *w, unsigned int seed)
{
	static uint64_t want[1 << 13];

	for (int i = 0; i < w->n; i++) {
		fill_pattern(want, seed, i / 2);
		want[0] = WP_MARK;
		if (memcmp(w->p + i * page_size, want, page_size))
			return false;
	}
	return true;
}

static void test_uffd_wp(void)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct wp_writer w = { .n = 2 * NPAIRS };
	int faults[2 * NPAIRS] = { 0 }, stray = -1, missed = 0, uffd;
	unsigned int seed = SEED + 5;
	pthread_t th;
	char sum = 0;

	uffd = uffd_wp_open();
	if (uffd < 0)
		return;
	w.p = map_pairs(NPAIRS, seed);
	CHECK(set_hide(1) == 0 && merge_pages(w.p, w.n) == 0,
	      "hide_merges=1, madvise");
	CHECK(ksm_wait_counter("pages_sharing", NPAIRS), "pairs merge");
	reg.range.start = (uintptr_t)w.p;
	reg.range.len = w.n * page_size;
	CHECK(ioctl(uffd, UFFDIO_REGISTER, &reg) == 0 &&
	      uffd_protect(uffd, w.p, w.n * page_size, true) == 0,
	      "register and protect: %s", strerror(errno));
	/* Paused, so that ksmd does not merge the copies again. */
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(pairs_shared(w.p, NPAIRS) == NPAIRS, "pairs share frames");
	for (int i = 0; i < NPAIRS; i++)
		sum += ((volatile char *)w.p)[2 * i * page_size + 5];
	if (CHECK(pthread_create(&th, NULL, wp_write, &w) == 0,
		  "pthread_create")) {
		stray = wp_serve(uffd, &w, faults);
		CHECK(atomic_load(&w.done), "the writer finished (%d)", sum);
		pthread_join(th, NULL);
	}
	for (int i = 0; i < w.n; i++)
		missed += !faults[i];
	CHECK(stray == 0 && missed == 0,
	      "a WP fault at each write: %d pages without, %d stray", missed,
	      stray);
	CHECK(wp_content(&w, seed), "content");
	close(uffd);
	munmap(w.p, w.n * page_size);
	CHECK(set_hide(0) == 0, "hide_merges=0");
	ktap_result(checks_passed(), "%s", names[6]);
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (ksm_read("hide_merges") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no hide_merges (not samepage)");
	if (!CHECK(ksm_reset() == 0, "reset"))
		return ktap_skip_all(names, ARRAY_SIZE(names), "no KSM");
	test_every_page_ksm();
	CHECK(ksm_reset() == 0, "reset");
	test_charged_per_mapping();
	CHECK(ksm_reset() == 0, "reset");
	test_read_copies();
	CHECK(ksm_reset() == 0, "reset");
	test_counters_root_only();
	CHECK(ksm_reset() == 0, "reset");
	test_request();
	CHECK(ksm_reset() == 0, "reset");
	test_busy_and_bad_input();
	CHECK(ksm_reset() == 0, "reset");
	test_uffd_wp();
	return ktap_finish();
}
