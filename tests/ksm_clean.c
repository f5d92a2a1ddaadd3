// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_clean.c - pages that held still are not read again, and a write to
 * them is never missed.
 *
 * samepage write-protects a page that stayed unchanged over a pass and
 * found no pair, and while its PTE stays read-only and clean it takes the
 * page's hash from what it knew (walk.c). Mainline reads every page at
 * every pass. Here: regions A and B hold different contents and are left
 * for several full scans; then A is rewritten, in different ways, with
 * B's content, and the two must merge within a few scans, holding that
 * content, as on mainline. A write missed by the shortcut would leave A
 * under its old hash until its periodic recheck, which these bounds do
 * not wait for. ksmd runs in step mode, one full scan when asked.
 *
 *   clean_store              plain stores
 *   clean_proc_mem           pwrite() to /proc/self/mem (a forced write
 *                            through get_user_pages())
 *   clean_vm_writev          process_vm_writev() (pages pinned, written
 *                            by the kernel, unpinned dirty)
 *   clean_proc_mem_ro        the same with A read-only: a forced write
 *                            reaches the page behind its read-only clean
 *                            PTE without a fault and leaves it clean
 *                            (can_follow_write_pte()); A and B must
 *                            merge within three scans of the write
 *   clean_mprotect_cycle     mprotect() read-only, read-write (which may
 *                            make the PTE writable without a fault), the
 *                            stores, then read-only again: the PTE is
 *                            read-only once more, but dirty
 *   clean_write_faults       samepage only: in a process without a
 *                            secondary MMU ksmd watches the dirty bits
 *                            of pages that held still and their stores
 *                            take no fault; in a child with one (the
 *                            notifier test driver's, when built) it
 *                            protects them, and the first store to each
 *                            takes a minor fault (but for one page a PTE
 *                            table, left writable)
 *   clean_writer             a process writes each page of a region
 *                            once every P scans, 8 rounds, P = 1, 2, 4:
 *                            its stores take no fault, as on mainline.
 *                            Again in a child with a secondary MMU
 *                            (samepage's driver): at P = 1 and 2 no
 *                            fault (a page is protected only after it
 *                            held still for protect_after_scans=2
 *                            visits); at P = 4 at most one a page, and
 *                            none in the last four rounds (it backs
 *                            off). Content checked at every round;
 *                            nothing merges
 *   clean_protect_off        samepage only: protect_after_scans takes 0
 *                            to 8 (EINVAL otherwise, value unchanged);
 *                            at 0 pages that held still are read at every
 *                            visit, and their stores take no fault
 *   clean_notifier           samepage only (CONFIG_KSM_NOTIFIER_TEST):
 *                            a secondary MMU is told of the protection
 *   clean_smart_written      with smart_scan=1, A and B held still
 *                            until smart scan skips them are written to
 *                            equal contents: every scan skips them as
 *                            mainline's schedule says (pages_skipped),
 *                            the write making no page young again, and
 *                            they merge at their second read after it
 *   clean_swapin             stores, then MADV_PAGEOUT to swap and a
 *                            read of each page: zram swaps it back in
 *                            clean and writable (no swap cache), so no
 *                            PTE or folio flag tells the store. A and B
 *                            must merge within RECHECK_SCANS scans: a
 *                            clean page is read anyway every 16th
 *                            visit, and that bound is what this waits
 *                            for (mainline merges them within a few)
 *
 * 32-bit kernels read every page at every visit: the two samepage-only
 * tests skip there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define N 64
#define SEED_A 70
#define SEED_B 71
#define STILL_SCANS 5
#define MERGE_SCANS 4
#define RO_MERGE_SCANS 3
#define SEED_C 72
#define AGE_SCANS 14
/* Smart scan reads an old page every ninth scan: the second such read. */
#define SMART_MERGE_SCANS 18
#define WRITER_ROUNDS 8
/* walk.c's SP_RECHECK, and the scans a pair takes once a page is read. */
#define RECHECK_SCANS (16 + MERGE_SCANS)
#define MMU_NOTIFY_PROTECTION_PAGE 3
_Static_assert(N == 64, "protected_in_log() keeps a bit a page in a long");

struct regions {
	char *a, *b;
};

/* A and B with their own contents, mergeable, left for STILL_SCANS scans. */
static bool regions_still(struct regions *r)
{
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_step_mode() == 0, "step mode");
	r->a = map_pages(N);
	r->b = map_pages(N);
	for (int i = 0; i < N; i++) {
		fill_page(r->a, i, SEED_A);
		fill_page(r->b, i, SEED_B);
	}
	if (!CHECK(merge_pages(r->a, N) == 0 && merge_pages(r->b, N) == 0,
		   "madvise"))
		return false;
	for (int s = 0; s < STILL_SCANS; s++)
		if (!CHECK(ksm_step(), "scan %d", s))
			return false;
	return CHECK(self_merging_pages() == 0, "merged before the write: %ld",
		     self_merging_pages());
}

/* After A took B's content: A and B merge, and each holds it. */
static void check_merged(struct regions *r)
{
	for (int s = 0; s < MERGE_SCANS && self_merging_pages() < 2 * N; s++)
		if (!CHECK(ksm_step(), "scan"))
			break;
	CHECK(self_merging_pages() == 2 * N, "ksm_merging_pages %ld of %d",
	      self_merging_pages(), 2 * N);
	CHECK(pages_wrong(r->a, N, SEED_B) == 0, "content of A");
	CHECK(pages_wrong(r->b, N, SEED_B) == 0, "content of B");
	/* Copy on write still parts them. */
	fill_page(r->a, 0, SEED_A);
	CHECK(page_holds(r->a, 0, SEED_A), "A after COW");
	CHECK(pages_wrong(r->b, N, SEED_B) == 0, "B after A's COW");
}

static void regions_free(struct regions *r)
{
	munmap(r->a, N * page_size);
	munmap(r->b, N * page_size);
}

/* The content A is to take: B's pattern, built in a private buffer. */
static char *b_content(void)
{
	char *buf = malloc(N * page_size);

	if (buf)
		for (int i = 0; i < N; i++)
			fill_page(buf, i, SEED_B);
	return buf;
}

static void test_store(void)
{
	struct regions r;

	if (regions_still(&r)) {
		for (int i = 0; i < N; i++)
			fill_page(r.a, i, SEED_B);
		check_merged(&r);
	}
	regions_free(&r);
	ktap_result(checks_passed(), "clean_store");
}

/* pwrite() B's content to A through /proc/self/mem. */
static void write_proc_mem(char *a)
{
	char *buf = b_content();
	ssize_t done;
	int fd;

	if (!CHECK(buf, "malloc"))
		return;
	fd = open("/proc/self/mem", O_RDWR);
	if (CHECK(fd >= 0, "open /proc/self/mem")) {
		/* 64-bit offsets: on i386 addresses pass 2 GiB. */
		done = pwrite64(fd, buf, N * page_size, (off64_t)(uintptr_t)a);
		CHECK(done == (ssize_t)(N * page_size), "pwrite: %zd", done);
		close(fd);
	}
	free(buf);
}

/* A's new content by process_vm_writev(): pinned, written, unpinned. */
static void write_vm_writev(char *a)
{
	char *buf = b_content();
	struct iovec local, remote;
	ssize_t done;

	if (!CHECK(buf, "malloc"))
		return;
	local.iov_base = buf;
	local.iov_len = N * page_size;
	remote.iov_base = a;
	remote.iov_len = N * page_size;
	done = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
	CHECK(done == (ssize_t)(N * page_size), "process_vm_writev: %zd (%s)",
	      done, strerror(errno));
	free(buf);
}

static void test_vm_writev(void)
{
	struct regions r;

	/* Without CONFIG_CROSS_MEMORY_ATTACH there is no such call. */
	if (process_vm_writev(getpid(), NULL, 0, NULL, 0, 0) &&
	    errno == ENOSYS) {
		ktap_skip_named("clean_vm_writev", "no process_vm_writev()");
		return;
	}
	if (regions_still(&r)) {
		write_vm_writev(r.a);
		check_merged(&r);
	}
	regions_free(&r);
	ktap_result(checks_passed(), "clean_vm_writev");
}

/* Pages of @p, @n of them, whose PTE holds a swap entry. */
static int pages_swapped(const char *p, int n)
{
	int swapped = 0;

	for (int i = 0; i < n; i++)
		swapped += !!(pagemap_entry(0, p + i * page_size) & PM_SWAP);
	return swapped;
}

static void test_swapin(void)
{
	volatile const char *v;
	struct regions r;
	int swapped, s;

	if (!have_swap()) {
		ktap_skip_named("clean_swapin", "no swap device");
		return;
	}
	if (!regions_still(&r))
		goto out;
	for (int i = 0; i < N; i++)
		fill_page(r.a, i, SEED_B);
	CHECK(madvise(r.a, N * page_size, MADV_PAGEOUT) == 0,
	      "MADV_PAGEOUT: %s", strerror(errno));
	swapped = pages_swapped(r.a, N);
	ktap_diag("%d of %d pages swapped out", swapped, N);
	CHECK(swapped > N / 2, "only %d pages swapped out", swapped);
	for (int i = 0; i < N; i++) {
		v = r.a + i * page_size;
		(void)v[0];
	}
	CHECK(pages_swapped(r.a, N) == 0, "pages left in swap");
	for (s = 0; s < RECHECK_SCANS && self_merging_pages() < 2 * N; s++)
		if (!CHECK(ksm_step(), "scan"))
			break;
	ktap_diag("merged after %d scans", s);
	CHECK(self_merging_pages() == 2 * N, "ksm_merging_pages %ld of %d",
	      self_merging_pages(), 2 * N);
	CHECK(pages_wrong(r.a, N, SEED_B) == 0, "content of A");
	CHECK(pages_wrong(r.b, N, SEED_B) == 0, "content of B");
out:
	regions_free(&r);
	ktap_result(checks_passed(), "clean_swapin");
}

static void test_proc_mem(void)
{
	struct regions r;

	if (regions_still(&r)) {
		write_proc_mem(r.a);
		check_merged(&r);
	}
	regions_free(&r);
	ktap_result(checks_passed(), "clean_proc_mem");
}

static void test_proc_mem_ro(void)
{
	size_t len = N * page_size;
	struct regions r;

	if (regions_still(&r)) {
		CHECK(mprotect(r.a, len, PROT_READ) == 0, "mprotect ro");
		write_proc_mem(r.a);
		for (int s = 0; s < RO_MERGE_SCANS &&
				self_merging_pages() < 2 * N; s++)
			if (!CHECK(ksm_step(), "scan"))
				break;
		CHECK(self_merging_pages() == 2 * N,
		      "ksm_merging_pages %ld of %d within %d scans",
		      self_merging_pages(), 2 * N, RO_MERGE_SCANS);
		CHECK(mprotect(r.a, len, PROT_READ | PROT_WRITE) == 0,
		      "mprotect rw");
		check_merged(&r);
	}
	regions_free(&r);
	ktap_result(checks_passed(), "clean_proc_mem_ro");
}

static void test_mprotect_cycle(void)
{
	size_t len = N * page_size;
	struct regions r;

	if (regions_still(&r)) {
		CHECK(mprotect(r.a, len, PROT_READ) == 0, "mprotect ro");
		CHECK(mprotect(r.a, len, PROT_READ | PROT_WRITE) == 0,
		      "mprotect rw");
		for (int i = 0; i < N; i++)
			fill_page(r.a, i, SEED_B);
		CHECK(mprotect(r.a, len, PROT_READ) == 0, "mprotect ro again");
		for (int s = 0; s < MERGE_SCANS && self_merging_pages() < 2 * N;
		     s++)
			if (!CHECK(ksm_step(), "scan"))
				break;
		CHECK(self_merging_pages() == 2 * N,
		      "ksm_merging_pages %ld of %d", self_merging_pages(),
		      2 * N);
		CHECK(mprotect(r.a, len, PROT_READ | PROT_WRITE) == 0,
		      "mprotect rw at the end");
		check_merged(&r);
	}
	regions_free(&r);
	ktap_result(checks_passed(), "clean_mprotect_cycle");
}

/* One store a page: how many minor faults it took. */
static long store_faults(char *p)
{
	long before = minor_faults();

	for (int i = 0; i < N; i++)
		p[i * page_size + 1] ^= 1;
	return minor_faults() - before;
}

/* Pages that held still are protected: their first stores fault. */
static void protected_faults(void)
{
	struct regions r;
	long faults;

	if (regions_still(&r)) {
		/* A PTE table keeps one page writable, for khugepaged. */
		faults = store_faults(r.a);
		CHECK(faults >= N - 2,
		      "%ld minor faults for %d protected pages", faults, N);
		/* Written, they are not protected again before a pass. */
		faults = store_faults(r.a);
		CHECK(faults < N / 4, "%ld minor faults for the second stores",
		      faults);
		CHECK(pages_wrong(r.b, N, SEED_B) == 0, "content of B");
		CHECK(pages_wrong(r.a, N, SEED_A) == 0, "content of A");
	}
	regions_free(&r);
}

static void test_write_faults(void)
{
	struct regions r;
	long faults;

	if (sizeof(long) < 8) {
		ktap_skip_named("clean_write_faults", "32-bit reads every page");
		return;
	}
	/* Stock (no max_kernel_pages) reads every page at every pass. */
	if (ksm_read("max_kernel_pages") < 0) {
		ktap_skip_named("clean_write_faults", "not samepage");
		return;
	}
	if (regions_still(&r)) {
		faults = store_faults(r.a);
		faults += store_faults(r.a);
		CHECK(faults == 0, "%ld minor faults for %d watched pages",
		      faults, N);
		CHECK(pages_wrong(r.b, N, SEED_B) == 0, "content of B");
		CHECK(pages_wrong(r.a, N, SEED_A) == 0, "content of A");
	}
	regions_free(&r);
	with_secondary_mmu(protected_faults, "protected pages");
	ktap_result(checks_passed(), "clean_write_faults");
}

/*
 * Write every page of @a once, WRITER_ROUNDS times, @period scans apart;
 * the minor faults of the stores of each round go in @faults.
 */
static bool write_rounds(char *a, int period, long *faults)
{
	for (int round = 0; round < WRITER_ROUNDS; round++) {
		long before = minor_faults();

		for (int i = 0; i < N; i++)
			fill_page(a, i, SEED_C + round);
		faults[round] = minor_faults() - before;
		if (!CHECK(pages_wrong(a, N, SEED_C + round) == 0,
			   "content at period %d round %d", period, round))
			return false;
		for (int s = 0; s < period; s++)
			if (!CHECK(ksm_step(), "scan"))
				return false;
	}
	return true;
}

/*
 * One region a period, written every that many scans: the faults its
 * stores take. Without a secondary MMU, or on mainline, none; with one
 * (@protected), none at periods 1 and 2, and the back-off stops them.
 */
static void writer_periods(bool protected)
{
	static const int periods[] = { 1, 2, 4 };
	long faults[WRITER_ROUNDS], total, late;
	char *a;

	if (!CHECK(ksm_reset() == 0, "reset") ||
	    !CHECK(ksm_step_mode() == 0, "step mode"))
		return;
	for (size_t p = 0; p < ARRAY_SIZE(periods); p++) {
		a = map_pages(N);
		for (int i = 0; i < N; i++)
			fill_page(a, i, SEED_A);
		if (!CHECK(merge_pages(a, N) == 0, "madvise") ||
		    !write_rounds(a, periods[p], faults)) {
			munmap(a, N * page_size);
			break;
		}
		total = late = 0;
		for (int r = 0; r < WRITER_ROUNDS; r++) {
			total += faults[r];
			late += r >= WRITER_ROUNDS / 2 ? faults[r] : 0;
		}
		if (!protected || periods[p] <= 2)
			CHECK(total == 0, "%ld faults at period %d", total,
			      periods[p]);
		CHECK(total <= N, "%ld faults at period %d", total,
		      periods[p]);
		CHECK(late == 0, "%ld faults in the last rounds, period %d",
		      late, periods[p]);
		CHECK(self_merging_pages() == 0, "merged: %ld",
		      self_merging_pages());
		munmap(a, N * page_size);
	}
}

static void writer_protected(void)
{
	writer_periods(true);
}

static void test_writer(void)
{
	writer_periods(false);
	if (ksm_read("protect_after_scans") >= 0)
		with_secondary_mmu(writer_protected, "the writer");
	ktap_result(checks_passed(), "clean_writer");
}

/* With protect_after_scans=0, pages that held still take no fault. */
static void unprotected_stores(void)
{
	char *a = NULL;
	long faults;

	if (!CHECK(ksm_reset() == 0, "reset") ||
	    !CHECK(ksm_write("protect_after_scans", 0) == 0,
		   "protect_after_scans=0") ||
	    !CHECK(ksm_step_mode() == 0, "step mode"))
		goto out;
	a = map_pages(N);
	for (int i = 0; i < N; i++)
		fill_page(a, i, SEED_A);
	if (!CHECK(merge_pages(a, N) == 0, "madvise"))
		goto out;
	for (int s = 0; s < STILL_SCANS; s++)
		if (!CHECK(ksm_step(), "scan %d", s))
			goto out;
	faults = store_faults(a);
	CHECK(faults == 0, "%ld minor faults with protection off", faults);
	for (int i = 0; i < N; i++)
		a[i * page_size + 1] ^= 1;
	CHECK(pages_wrong(a, N, SEED_A) == 0, "content");
out:
	if (a)
		munmap(a, N * page_size);
	ksm_write("protect_after_scans", 2);
}

static void test_protect_off(void)
{
	static const char *const bad[] = { "9", "-1", "abc", "\n", "1 2",
					   "4294967296" };

	if (ksm_read("protect_after_scans") < 0) {
		ktap_skip_named("clean_protect_off", "no protect_after_scans");
		return;
	}
	if (!CHECK(ksm_reset() == 0, "reset"))
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(ksm_write_str("protect_after_scans", bad[i]) == -EINVAL &&
		      ksm_read("protect_after_scans") == 2,
		      "protect_after_scans \"%s\" refused, unchanged", bad[i]);
	CHECK(ksm_write("protect_after_scans", 8) == 0 &&
	      ksm_read("protect_after_scans") == 8, "protect_after_scans=8");
	/* Where ksmd would protect pages: with a secondary MMU. */
	if (access(NT_PATH, F_OK))
		unprotected_stores();
	else
		with_secondary_mmu(unprotected_stores, "protection off");
out:
	ksm_write("protect_after_scans", 2);
	ktap_result(checks_passed(), "clean_protect_off");
}

/* Is [@addr, @addr + N pages) covered by PROTECTION_PAGE starts in @log? */
static bool protected_in_log(FILE *log, unsigned long addr)
{
	unsigned long start, end, covered = 0;
	char line[128];
	int event;

	while (fgets(line, sizeof(line), log))
		if (sscanf(line, "A start 0x%lx-0x%lx event=%d", &start, &end,
			   &event) == 3 &&
		    event == MMU_NOTIFY_PROTECTION_PAGE)
			for (int i = 0; i < N; i++)
				if (start <= addr + i * page_size &&
				    addr + i * page_size < end)
					covered |= 1UL << i;
	return covered == ~0UL;
}

static void test_notifier(void)
{
	struct regions r = { };
	FILE *log;
	int fd;

	if (sizeof(long) < 8) {
		ktap_skip_named("clean_notifier", "32-bit reads every page");
		return;
	}
	fd = open(NT_PATH, O_RDWR);
	if (fd < 0) {
		ktap_skip_named("clean_notifier", "no " NT_PATH);
		return;
	}
	if (CHECK(write(fd, "start", 5) == 5, "start the notifiers") &&
	    regions_still(&r)) {
		lseek(fd, 0, SEEK_SET);
		log = fdopen(dup(fd), "r");
		if (CHECK(log, "read the log")) {
			CHECK(protected_in_log(log, (unsigned long)r.a),
			      "every page of A in a protection range");
			fclose(log);
		}
	}
	close(fd);
	if (r.a)
		regions_free(&r);
	ktap_result(checks_passed(), "clean_notifier");
}

/*
 * Mainline's smart scan: is the @visit-th visit (from 1) of a page that
 * is not a KSM page skipped? A page's age counts its visits, whatever its
 * content does; from its fourth visit on, a visit that has no skip left
 * reads it and grants it 1, 2, 4 or 8 skips, the older the page the more.
 */
static bool smart_skips(int visit)
{
	int age, left = 0;
	bool skip = false;

	for (age = 0; age < visit; age++) {
		skip = false;
		if (age < 3)
			continue;
		if (left) {
			left--;
			skip = true;
		} else {
			left = age <= 3 ? 1 : age <= 5 ? 2 : age <= 8 ? 4 : 8;
		}
	}
	return skip;
}

/* One scan, the @visit-th of A's and B's pages: skipped as mainline says? */
static bool smart_step(int visit, long *skipped)
{
	long now, want = smart_skips(visit) ? 2 * N : 0;

	if (!CHECK(ksm_step(), "scan %d", visit))
		return false;
	now = ksm_read("pages_skipped");
	CHECK(now - *skipped == want, "visit %d: %ld pages skipped, want %ld",
	      visit, now - *skipped, want);
	*skipped = now;
	return true;
}

/*
 * Smart scan: A and B, made mergeable together, are held still for
 * AGE_SCANS scans, then both take SEED_C. Every scan skips them as
 * mainline's schedule says, before the write and after it (a write does
 * not make a page young again); they merge at the second read after the
 * write, the first finding the content changed, as on mainline.
 */
static void test_smart_written(void)
{
	struct regions r = {};
	long skipped;
	int v = 0;

	if (!CHECK(ksm_reset() == 0, "reset") ||
	    !CHECK(ksm_write("smart_scan", 1) == 0, "smart_scan=1") ||
	    !CHECK(ksm_step_mode() == 0, "step mode"))
		goto out;
	r.a = map_pages(N);
	r.b = map_pages(N);
	for (int i = 0; i < N; i++) {
		fill_page(r.a, i, SEED_A);
		fill_page(r.b, i, SEED_B);
	}
	skipped = ksm_read("pages_skipped");
	if (!CHECK(merge_pages(r.a, N) == 0 && merge_pages(r.b, N) == 0,
		   "madvise"))
		goto out;
	while (v < AGE_SCANS)
		if (!smart_step(++v, &skipped))
			goto out;
	for (int i = 0; i < N; i++) {
		fill_page(r.a, i, SEED_C);
		fill_page(r.b, i, SEED_C);
	}
	while (v < AGE_SCANS + SMART_MERGE_SCANS &&
	       self_merging_pages() < 2 * N)
		if (!smart_step(++v, &skipped))
			goto out;
	CHECK(self_merging_pages() == 2 * N,
	      "ksm_merging_pages %ld of %d after %d scans from the write",
	      self_merging_pages(), 2 * N, v - AGE_SCANS);
	CHECK(pages_wrong(r.a, N, SEED_C) == 0, "content of A");
	CHECK(pages_wrong(r.b, N, SEED_C) == 0, "content of B");
out:
	if (r.a)
		regions_free(&r);
	ksm_write("smart_scan", 0);
	ktap_result(checks_passed(), "clean_smart_written");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(11);
	test_store();
	test_swapin();
	test_proc_mem();
	test_vm_writev();
	test_proc_mem_ro();
	test_mprotect_cycle();
	test_write_faults();
	test_writer();
	test_protect_off();
	test_notifier();
	test_smart_written();
	ksm_reset();
	return ktap_finish();
}
