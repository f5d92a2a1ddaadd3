// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_vma.c - merged pages under the VMA operations of the rest of mm:
 * mlock/munlock, mprotect, mremap (move and grow), MADV_DONTNEED,
 * MADV_FREE, MADV_COLD, userfaultfd write-protection, fork, exit while
 * ksmd is in the middle of a pass, and MADV_MERGEABLE while ksmd forgets
 * what it tracked of an mm that had no mergeable area left.
 *
 * Each item merges identical pages in two or more sharers (two regions of
 * this process, or forked children), waits on the KSM counters, applies
 * the operation, then checks the content seen by every sharer, the KSM
 * counters ksmd settles on, and that ksmd goes on completing scans without
 * a splat in the kernel log. What is expected is what mainline 6.12 does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "ksmtest.h"

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif

#define N 32	/* pages in each region */
#define W 4	/* pages written to show copy on write */

static int splats_at_start;

static void begin(void)
{
	splats_at_start = kernel_splats();
}

/*
 * ksmd completes further scans (with a page of its own to look at) and the
 * kernel log has no new splat.
 */
static void check_healthy(void)
{
	CHECK(ksm_wait_scans_with_page(2, 0x76ff, getpid()),
	      "ksmd completes two more scans");
	CHECK(kernel_splats() == splats_at_start, "%d new splats in the log",
	      kernel_splats() - splats_at_start);
}

/* How many of @n pages of @a map the same page frame as those of @b. */
static int same_frames(const char *a, const char *b, int n)
{
	int same = 0;

	for (int i = 0; i < n; i++) {
		unsigned long pfn = page_pfn(a + i * page_size);

		same += pfn && pfn == page_pfn(b + i * page_size);
	}
	return same;
}

struct frames {
	const char *a, *b;
	int n;
};

static bool all_shared(void *arg)
{
	struct frames *f = arg;

	return same_frames(f->a, f->b, f->n) == f->n;
}

/*
 * Wait until the @n pages of @a map the same frames as those of @b. The
 * counters alone will not do after a copy that ksmd has not seen yet:
 * they still count the old mappings until ksmd passes them.
 */
static bool wait_shared(const char *a, const char *b, int n)
{
	struct frames f = { a, b, n };

	return ksm_wait_until(all_shared, &f, 20);
}

/*
 * Two regions of this process, A and B, holding the same N distinct pages
 * (seed @seed), merged: shared N, sharing N. pair_setup() begins a test:
 * check_healthy() looks for splats from then on.
 */
struct pair {
	char *a, *b;
	unsigned int seed;
};

static void pair_setup(struct pair *r, unsigned int seed)
{
	begin();
	CHECK(ksm_reset() == 0, "reset");
	r->seed = seed;
	r->a = map_pages(N);
	r->b = map_pages(N);
	for (int i = 0; i < N; i++) {
		fill_page(r->a, i, seed);
		fill_page(r->b, i, seed);
	}
	CHECK(merge_pages(r->a, N) == 0 && merge_pages(r->b, N) == 0,
	      "madvise");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merged");
	CHECK(same_frames(r->a, r->b, N) == N, "A and B share %d frames",
	      same_frames(r->a, r->b, N));
}

static void pair_free(struct pair *r)
{
	munmap(r->a, N * page_size);
	munmap(r->b, N * page_size);
}

/* Pages of A and B not holding their pattern. */
static size_t pair_wrong(const struct pair *r)
{
	return pages_wrong(r->a, N, r->seed) + pages_wrong(r->b, N, r->seed);
}

/* The end of a test of a pair: ksmd is healthy, @r goes, @name's result. */
static void pair_done(struct pair *r, const char *name)
{
	check_healthy();
	pair_free(r);
	ktap_result(checks_passed(), "%s", name);
}

/* Pages [@from, @to) of @p hold seed @alt, the others seed @seed. */
static size_t wrong_except(const char *p, int n, unsigned int seed, int from,
			   int to, unsigned int alt)
{
	size_t bad = 0;

	for (int i = 0; i < n; i++)
		bad += !page_holds(p, i, i >= from && i < to ? alt : seed);
	return bad;
}

/*
 * mlock() of a writable merged range populates it with write faults
 * (populate_vma_page_range() uses FOLL_WRITE to break COW), so each page
 * gets a private copy; ksmd then merges the locked pages again. With
 * MLOCK_ONFAULT nothing is faulted and the pages stay merged. munlock()
 * changes nothing.
 */
static void test_mlock(void)
{
	struct pair r;
	long cow;

	pair_setup(&r, 0x7601);
	/* ksmd paused, so that it cannot merge the copies meanwhile. */
	CHECK(ksm_pause() == 0, "pause ksmd");
	cow = vmstat("cow_ksm");
	CHECK(mlock(r.a, N * page_size) == 0, "mlock: %s", strerror(errno));
	ktap_diag("mlock: %d of %d pages still merged, cow_ksm +%ld",
		  same_frames(r.a, r.b, N), N, vmstat("cow_ksm") - cow);
	CHECK(same_frames(r.a, r.b, N) == 0, "mlock broke COW of %d pages",
	      N - same_frames(r.a, r.b, N));
	CHECK(vmstat("cow_ksm") - cow == N, "cow_ksm +%ld",
	      vmstat("cow_ksm") - cow);
	CHECK(pair_wrong(&r) == 0, "content after mlock");
	CHECK(ksm_resume() == 0, "resume ksmd");
	CHECK(wait_shared(r.a, r.b, N), "locked pages merged again");
	CHECK(ksm_wait_counts(N, N, 0, 0), "locked pages merged again");
	CHECK(same_frames(r.a, r.b, N) == N, "A and B share %d frames",
	      same_frames(r.a, r.b, N));
	CHECK(pair_wrong(&r) == 0, "content, locked and merged");

	CHECK(ksm_pause() == 0, "pause ksmd");
	cow = vmstat("cow_ksm");
	CHECK(mlock2(r.b, N * page_size, MLOCK_ONFAULT) == 0,
	      "mlock2(MLOCK_ONFAULT): %s", strerror(errno));
	CHECK(same_frames(r.a, r.b, N) == N && vmstat("cow_ksm") == cow,
	      "MLOCK_ONFAULT keeps %d of %d merged, cow_ksm +%ld",
	      same_frames(r.a, r.b, N), N, vmstat("cow_ksm") - cow);
	CHECK(ksm_resume() == 0, "resume ksmd");

	CHECK(munlock(r.a, N * page_size) == 0, "munlock A");
	CHECK(munlock(r.b, N * page_size) == 0, "munlock B");
	CHECK(same_frames(r.a, r.b, N) == N, "munlock: %d frames shared",
	      same_frames(r.a, r.b, N));
	CHECK(ksm_wait_counts(N, N, 0, 0), "after munlock");
	CHECK(pair_wrong(&r) == 0, "content after munlock");

	/* Locked and merged, a write still copies. */
	CHECK(mlock(r.a, N * page_size) == 0, "mlock again");
	CHECK(wait_shared(r.a, r.b, N), "merged again");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merged again");
	fill_page(r.a, 0, 0x7602);
	CHECK(page_holds(r.a, 0, 0x7602) && page_holds(r.b, 0, r.seed),
	      "cow of a locked page");
	CHECK(ksm_wait_counts(N, N - 1, 1, 0), "after cow");
	munlock(r.a, N * page_size);
	pair_done(&r, "mlock_munlock");
}

/*
 * mprotect(PROT_READ) and back: the KSM pages stay mapped (read-only PTEs
 * of pages that are not exclusive stay read-only); a write then copies.
 */
static void test_mprotect(void)
{
	struct pair r;
	long cow;

	pair_setup(&r, 0x7611);
	CHECK(mprotect(r.a, N * page_size, PROT_READ) == 0, "PROT_READ");
	CHECK(pages_wrong(r.a, N, r.seed) == 0, "content of read-only A");
	CHECK(ksm_wait_counts(N, N, 0, 0), "read-only A stays merged");
	CHECK(mprotect(r.a, N * page_size, PROT_READ | PROT_WRITE) == 0,
	      "PROT_READ|PROT_WRITE");
	CHECK(same_frames(r.a, r.b, N) == N, "%d frames shared",
	      same_frames(r.a, r.b, N));
	cow = vmstat("cow_ksm");
	for (int i = 0; i < W; i++)
		fill_page(r.a, i, 0x7612);
	CHECK(vmstat("cow_ksm") == cow + W, "cow_ksm +%ld, want +%d",
	      vmstat("cow_ksm") - cow, W);
	CHECK(wrong_except(r.a, N, r.seed, 0, W, 0x7612) == 0, "content of A");
	CHECK(pages_wrong(r.b, N, r.seed) == 0, "content of B");
	CHECK(same_frames(r.a, r.b, N) == N - W, "%d frames shared",
	      same_frames(r.a, r.b, N));
	CHECK(ksm_wait_counts(N, N - W, W, 0), "after cow");
	CHECK(wrong_except(r.a, N, r.seed, 0, W, 0x7612) == 0 &&
	      pages_wrong(r.b, N, r.seed) == 0, "content after scans");
	pair_done(&r, "mprotect_ro_rw_cow");
}

static bool unmapped(const void *p)
{
	unsigned char vec;

	return mincore((void *)p, page_size, &vec) && errno == ENOMEM;
}

/*
 * mremap: moving A (MREMAP_FIXED to a reserved place) unmerges the range
 * first (move_vma() calls ksm_madvise(MADV_UNMERGEABLE) on the old VMA but
 * keeps VM_MERGEABLE), and ksmd merges it again at the new address.
 * Growing it leaves the new tail empty (zero) and mergeable: copies of B
 * written there merge too. A write at the new address copies on write.
 */
static void test_mremap(void)
{
	struct pair r;
	char *dst, *old, *grown;
	long cow;

	pair_setup(&r, 0x7621);
	dst = mmap(NULL, N * page_size, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(dst != MAP_FAILED, "reserve");
	/* ksmd paused, so that it cannot merge the moved pages meanwhile. */
	CHECK(ksm_pause() == 0, "pause ksmd");
	cow = vmstat("cow_ksm");
	old = r.a;
	r.a = mremap(old, N * page_size, N * page_size,
		     MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	CHECK(r.a == dst, "mremap move: %s", strerror(errno));
	if (r.a != dst) {
		ksm_resume();
		r.a = old;
		goto out;
	}
	CHECK(unmapped(old), "old range unmapped");
	ktap_diag("move: %d of %d pages still merged, cow_ksm +%ld",
		  same_frames(r.a, r.b, N), N, vmstat("cow_ksm") - cow);
	CHECK(same_frames(r.a, r.b, N) == 0, "move unmerged all but %d",
	      same_frames(r.a, r.b, N));
	CHECK(pages_wrong(r.a, N, r.seed) == 0, "content at the new address");
	CHECK(pages_wrong(r.b, N, r.seed) == 0, "content of B");
	CHECK(vmstat("cow_ksm") == cow + N, "cow_ksm +%ld",
	      vmstat("cow_ksm") - cow);
	CHECK(ksm_resume() == 0, "resume ksmd");
	CHECK(wait_shared(r.a, r.b, N), "merged again after the move");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merged again after the move");
	CHECK(same_frames(r.a, r.b, N) == N, "%d frames shared",
	      same_frames(r.a, r.b, N));

	/* Grow to 2N, moving if it must (then unmerging as above). */
	CHECK(ksm_pause() == 0, "pause ksmd");
	grown = mremap(r.a, N * page_size, 2 * N * page_size, MREMAP_MAYMOVE);
	CHECK(grown != MAP_FAILED, "mremap grow: %s", strerror(errno));
	if (grown == MAP_FAILED) {
		ksm_resume();
		goto out;
	}
	ktap_diag("grow %s, %d of %d pages still merged",
		  grown == r.a ? "in place" : "moved",
		  same_frames(grown, r.b, N), N);
	CHECK(same_frames(grown, r.b, N) == (grown == r.a ? N : 0),
	      "%d of %d pages still merged after growing %s",
	      same_frames(grown, r.b, N), N,
	      grown == r.a ? "in place" : "by a move");
	CHECK(ksm_resume() == 0, "resume ksmd");
	r.a = grown;
	CHECK(pages_wrong(r.a, N, r.seed) == 0, "content after grow");
	for (int i = N; i < 2 * N; i++) {
		static const char zero[4096];
		char *p = r.a + i * page_size;

		CHECK(!memcmp(p, zero, sizeof(zero)), "tail page %d zero", i);
		fill_pattern(p, r.seed, i - N);
	}
	CHECK(wait_shared(r.a, r.b, N) &&
	      wait_shared(r.a + N * page_size, r.b, N), "grown A merged");
	CHECK(ksm_wait_counts(N, 2 * N, 0, 0), "tail merged");
	CHECK(same_frames(r.a, r.b, N) == N &&
	      same_frames(r.a + N * page_size, r.b, N) == N, "frames shared");

	cow = vmstat("cow_ksm");
	for (int i = 0; i < W; i++)
		fill_page(r.a, i, 0x7622);
	CHECK(vmstat("cow_ksm") == cow + W, "cow_ksm +%ld, want +%d",
	      vmstat("cow_ksm") - cow, W);
	CHECK(ksm_wait_counts(N, 2 * N - W, W, 0), "after cow");
	CHECK(wrong_except(r.a, N, r.seed, 0, W, 0x7622) == 0, "head of A");
	for (int i = 0; i < N; i++)
		CHECK(holds_pattern(r.a + (N + i) * page_size, r.seed, i),
		      "tail page %d", i);
	CHECK(pages_wrong(r.b, N, r.seed) == 0, "content of B");
	check_healthy();
	munmap(r.a, 2 * N * page_size);
	munmap(r.b, N * page_size);
	ktap_result(checks_passed(), "mremap_move_grow");
	return;
out:
	pair_free(&r);
	ktap_result(checks_passed(), "mremap_move_grow");
}

/*
 * MADV_DONTNEED of D merged pages of A: they read back zero (the zero
 * page, which ksmd does not look at), B keeps them, and those KSM pages
 * are left with one sharer each. Writing the content back merges again.
 */
static void test_dontneed(void)
{
	const int from = 8, d = 4;
	static const char zero[4096];
	struct pair r;

	pair_setup(&r, 0x7631);
	CHECK(!madvise(r.a + from * page_size, d * page_size, MADV_DONTNEED),
	      "MADV_DONTNEED");
	for (int i = 0; i < N; i++) {
		if (i >= from && i < from + d)
			CHECK(!memcmp(r.a + i * page_size, zero, sizeof(zero)),
			      "page %d zero", i);
		else
			CHECK(page_holds(r.a, i, r.seed), "A page %d", i);
	}
	CHECK(pages_wrong(r.b, N, r.seed) == 0, "content of B");
	CHECK(ksm_wait_counts(N, N - d, 0, 0), "after MADV_DONTNEED");
	CHECK(pages_wrong(r.b, N, r.seed) == 0, "content of B after scans");
	for (int i = from; i < from + d; i++)
		fill_page(r.a, i, r.seed);
	CHECK(wait_shared(r.a, r.b, N), "rewritten pages merged");
	CHECK(ksm_wait_counts(N, N, 0, 0), "rewritten pages merged");
	CHECK(pair_wrong(&r) == 0, "content");
	pair_done(&r, "madv_dontneed");
}

/*
 * MADV_FREE leaves KSM pages alone (madvise_free_pte_range() skips KSM
 * folios: they may gain mappings at any time, so stay dirty): nothing is
 * marked lazy-free, content and merging stay.
 */
static void test_free(void)
{
	struct pair r;
	long lazy;

	pair_setup(&r, 0x7641);
	lazy = vmstat("pglazyfree");
	CHECK(madvise(r.a, N * page_size, MADV_FREE) == 0, "MADV_FREE");
	CHECK(vmstat("pglazyfree") == lazy, "pglazyfree +%ld",
	      vmstat("pglazyfree") - lazy);
	CHECK(same_frames(r.a, r.b, N) == N, "%d frames shared",
	      same_frames(r.a, r.b, N));
	CHECK(ksm_wait_counts(N, N, 0, 0), "after MADV_FREE");
	CHECK(pair_wrong(&r) == 0, "content");
	/* A write after MADV_FREE copies as any other. */
	fill_page(r.a, 1, 0x7642);
	CHECK(wrong_except(r.a, N, r.seed, 1, 2, 0x7642) == 0 &&
	      pages_wrong(r.b, N, r.seed) == 0, "content after cow");
	CHECK(ksm_wait_counts(N, N - 1, 1, 0), "after cow");
	pair_done(&r, "madv_free");
}

/*
 * MADV_COLD on KSM pages mapped twice: folios mapped by more than one are
 * left where they are; content and merging stay.
 */
static void test_cold(void)
{
	struct pair r;

	pair_setup(&r, 0x7651);
	CHECK(madvise(r.a, N * page_size, MADV_COLD) == 0, "MADV_COLD A");
	CHECK(madvise(r.b, N * page_size, MADV_COLD) == 0, "MADV_COLD B");
	CHECK(same_frames(r.a, r.b, N) == N, "%d frames shared",
	      same_frames(r.a, r.b, N));
	CHECK(ksm_wait_counts(N, N, 0, 0), "after MADV_COLD");
	CHECK(pair_wrong(&r) == 0, "content");
	pair_done(&r, "madv_cold");
}

/* userfaultfd write-protection of a merged range */
struct wp_writer {
	char *a;
	atomic_int done;
};

static void *wp_write(void *arg)
{
	struct wp_writer *w = arg;

	for (int i = 0; i < W; i++)
		fill_page(w->a, 2 * i, 0x7662);
	atomic_store(&w->done, 1);
	return NULL;
}

/* What page @i of A holds once the writer wrote every other page. */
static unsigned int wp_seed(unsigned int seed, int i)
{
	return (i & 1) || i >= 2 * W ? seed : 0x7662;
}

static int uffd_wp(int uffd, char *p, size_t len, bool protect)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
}

/*
 * Register A for write-protect faults, protect it, and let a thread write
 * W of its pages: each write faults to us (a WP fault at that page), we
 * take the protection off that page, the write goes on and copies the KSM
 * page. B and the other pages of A keep their content.
 */
static void test_uffd_wp(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct wp_writer w = { 0 };
	int faults[N] = { 0 }, stray = 0, uffd, nfaults = 0;
	double deadline;
	pthread_t th;
	struct pair r;
	long cow, moved, aged;
	bool api_ok;

	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 && (errno == ENOSYS || errno == EPERM)) {
		ktap_skip_named("uffd_wp", "no userfaultfd");
		return;
	}
	CHECK(uffd >= 0, "userfaultfd: %s", strerror(errno));
	api_ok = ioctl(uffd, UFFDIO_API, &api) == 0;
	CHECK(api_ok, "UFFDIO_API: %s", strerror(errno));
	/* Only some architectures have UFFD-WP (on x86, not i386). */
	if (api_ok && !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
		close(uffd);
		ktap_skip_named("uffd_wp", "no UFFD-WP");
		return;
	}
	pair_setup(&r, 0x7661);
	reg.range.start = (uintptr_t)r.a;
	reg.range.len = N * page_size;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		CHECK(0, "UFFDIO_REGISTER(WP): %s", strerror(errno));
		goto out;
	}
	CHECK(uffd_wp(uffd, r.a, N * page_size, true) == 0,
	      "UFFDIO_WRITEPROTECT");
	CHECK(same_frames(r.a, r.b, N) == N, "protected, %d frames shared",
	      same_frames(r.a, r.b, N));
	CHECK(pages_wrong(r.a, N, r.seed) == 0, "reads of protected pages");

	/*
	 * ksmd paused, as for mlock and mremap: cow_ksm counts every copy of
	 * a KSM page, ksmd's unsharing of a pair it could not finish too, and
	 * this counts the writer's copies alone.
	 */
	CHECK(ksm_pause() == 0, "pause ksmd");
	cow = vmstat("cow_ksm");
	moved = vmstat("pgmigrate_success");
	aged = vmstat("pgrefill") + vmstat("pgscan_kswapd") +
	       vmstat("pgscan_direct");
	w.a = r.a;
	if (pthread_create(&th, NULL, wp_write, &w)) {
		CHECK(0, "pthread_create");
		ksm_resume();
		goto out;
	}
	deadline = monotonic_seconds() + 60;
	while (!atomic_load(&w.done) && monotonic_seconds() < deadline) {
		struct pollfd pfd = { .fd = uffd, .events = POLLIN };
		struct uffd_msg msg;
		uintptr_t addr;
		long i;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT ||
		    !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
			stray++;
			continue;
		}
		addr = msg.arg.pagefault.address & ~(uintptr_t)(page_size - 1);
		i = (long)(addr - (uintptr_t)r.a) / (long)page_size;
		if (i < 0 || i >= N || (i & 1) || i >= 2 * W)
			stray++;
		else
			faults[i]++;
		nfaults++;
		CHECK(uffd_wp(uffd, (char *)addr, page_size, false) == 0,
		      "un-protect page %ld", i);
	}
	if (!atomic_load(&w.done)) {
		CHECK(0, "writer still blocked after 60 s");
		uffd_wp(uffd, r.a, N * page_size, false);
	}
	pthread_join(th, NULL);
	ktap_diag("%d WP faults, %d stray, cow_ksm +%ld, pages migrated %ld, scanned by reclaim %ld",
		  nfaults, stray, vmstat("cow_ksm") - cow,
		  vmstat("pgmigrate_success") - moved,
		  vmstat("pgrefill") + vmstat("pgscan_kswapd") +
		  vmstat("pgscan_direct") - aged);
	CHECK(stray == 0, "%d unexpected faults", stray);
	for (int i = 0; i < W; i++)
		CHECK(faults[2 * i] >= 1, "page %d faulted %d times", 2 * i,
		      faults[2 * i]);
	CHECK(vmstat("cow_ksm") == cow + W, "cow_ksm +%ld, want +%d",
	      vmstat("cow_ksm") - cow, W);
	for (int i = 0; i < N; i++)
		CHECK(page_holds(r.a, i, wp_seed(r.seed, i)),
		      "A page %d", i);
	CHECK(ksm_resume() == 0, "resume ksmd");
	CHECK(pages_wrong(r.b, N, r.seed) == 0, "content of B");
	/* The rest of A is still protected: un-protect and unregister. */
	CHECK(uffd_wp(uffd, r.a, N * page_size, false) == 0, "un-protect all");
	CHECK(ioctl(uffd, UFFDIO_UNREGISTER, &reg.range) == 0, "unregister");
	CHECK(ksm_wait_counts(N, N - W, W, 0), "after the writes");
	for (int i = 0; i < N; i++)
		CHECK(page_holds(r.a, i, wp_seed(r.seed, i)),
		      "A page %d after scans", i);
	CHECK(pages_wrong(r.b, N, r.seed) == 0, "content of B after scans");
	check_healthy();
out:
	pair_free(&r);
	if (uffd >= 0)
		close(uffd);
	ktap_result(checks_passed(), "uffd_wp");
}

/*
 * The forked child: 'c' checks A and B, 'w' writes pages [0, W) of A with
 * seed 0x7672 first; replies 'k' or 'x'.
 */
static int kid_forked(void *arg, int i, int cmd, int reply)
{
	struct pair *r = arg;
	bool written = false;
	char c;

	while ((c = kid_wait_cmd(cmd)) != 'q') {
		size_t bad;

		if (c == 'w') {
			for (int j = 0; j < W; j++)
				fill_page(r->a, j, 0x7672);
			written = true;
		}
		bad = wrong_except(r->a, N, r->seed, 0, written ? W : 0,
				   0x7672);
		bad += pages_wrong(r->b, N, r->seed);
		kid_reply(reply, bad ? 'x' : 'k');
	}
	return 0;
}

/*
 * Fork a process whose A and B are merged: the child sees the content and
 * ksmd counts its mappings (sharing 3N). The child writes [0, W) of A, the
 * parent [W, 2W) of B: each copy is private to its writer. When the child
 * exits, its mappings go.
 */
static void test_fork(void)
{
	struct kids k;
	struct pair r;
	long cow;
	char c;

	pair_setup(&r, 0x7671);
	CHECK(kids_start(&k, 1, kid_forked, &r) == 0, "fork");
	CHECK(kid_call(&k, 0, 'c', &c) && c == 'k', "child content (%c)", c);
	CHECK(ksm_wait_counts(N, 3 * N, 0, 0), "child's mappings counted");

	cow = vmstat("cow_ksm");
	CHECK(kid_call(&k, 0, 'w', &c) && c == 'k', "child writes (%c)", c);
	for (int i = W; i < 2 * W; i++)
		fill_page(r.b, i, 0x7673);
	CHECK(vmstat("cow_ksm") == cow + 2 * W, "cow_ksm +%ld, want +%d",
	      vmstat("cow_ksm") - cow, 2 * W);
	CHECK(pages_wrong(r.a, N, r.seed) == 0, "parent's A");
	CHECK(wrong_except(r.b, N, r.seed, W, 2 * W, 0x7673) == 0,
	      "parent's B");
	CHECK(kid_call(&k, 0, 'c', &c) && c == 'k', "child content (%c)", c);
	CHECK(ksm_wait_counts(N, 3 * N - 2 * W, 2 * W, 0), "after the writes");
	CHECK(kid_call(&k, 0, 'c', &c) && c == 'k', "child content (%c)", c);

	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "child exits");
	CHECK(ksm_wait_counts(N, N - W, W, 0), "after the child's exit");
	CHECK(pages_wrong(r.a, N, r.seed) == 0 &&
	      wrong_except(r.b, N, r.seed, W, 2 * W, 0x7673) == 0,
	      "parent's content after the child's exit");
	pair_done(&r, "fork_cow_both_ways");
}

/*
 * A short-lived sharer: 64 pages, the first 32 the same in every sharer,
 * 16 with four copies each inside it, 16 its own. It exits after a random
 * while: at once, or once ksmd merged some of its pages, or after writing
 * to some of those too. Exit status 0 if its content was right.
 */
#define EX_PAGES 64

static int exit_kid(unsigned int r)
{
	char *p = map_pages(EX_PAGES);
	double deadline;
	int bad = 0;

	for (int j = 0; j < EX_PAGES; j++) {
		if (j < 32)
			fill_pattern(p + j * page_size, 0x7681, j);
		else if (j < 48)
			fill_pattern(p + j * page_size, 0x7682, j % 4);
		else
			fill_pattern(p + j * page_size, 0x7683 + getpid(), j);
	}
	if (merge_pages(p, EX_PAGES))
		return 2;
	if (r % 3) {
		deadline = monotonic_seconds() + 20;
		while (self_merging_pages() <= (long)(r % 16) &&
		       monotonic_seconds() < deadline)
			usleep(1000);
	}
	if (r % 3 == 2)
		for (int j = 0; j < 40; j += 3)
			fill_pattern(p + j * page_size, 0x7684, j);
	usleep((r >> 4) % 30000);
	for (int j = 0; j < EX_PAGES; j++) {
		char *q = p + j * page_size;

		if (r % 3 == 2 && j < 40 && j % 3 == 0)
			bad += !holds_pattern(q, 0x7684, j);
		else if (j < 32)
			bad += !holds_pattern(q, 0x7681, j);
		else if (j < 48)
			bad += !holds_pattern(q, 0x7682, j % 4);
		else
			bad += !holds_pattern(q, 0x7683 + getpid(), j);
	}
	return bad ? 1 : 0;	/* exits with its pages still mapped */
}

/*
 * Many sharers exit at random moments while ksmd scans in small batches
 * (pages_to_scan 16, sleep_millisecs 0), so that exits land in the middle
 * of passes, of merges and of walks of the exiting mm. Afterwards every
 * counter goes back to 0 and ksmd goes on scanning.
 */
static void test_exit_midscan(void)
{
	const int rounds = 4, per_round = 8;
	unsigned int seed = time(NULL) ^ getpid();
	long most_sharing = 0;
	int failed = 0, started = 0;

	begin();
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("pages_to_scan", 16) == 0, "pages_to_scan 16");
	ktap_diag("random seed %u", seed);
	srand(seed);
	for (int round = 0; round < rounds; round++) {
		pid_t pid[per_round];

		for (int i = 0; i < per_round; i++) {
			unsigned int r = rand();

			pid[i] = fork();
			if (pid[i] == 0)
				_exit(exit_kid(r));
			if (pid[i] > 0)
				started++;
			usleep(rand() % 5000);
		}
		for (int i = 0; i < per_round; i++) {
			int status;

			if (pid[i] <= 0)
				continue;
			while (waitpid(pid[i], &status, WNOHANG) == 0) {
				long s = ksm_read("pages_sharing");

				if (s > most_sharing)
					most_sharing = s;
				usleep(2000);
			}
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				failed++;
		}
	}
	ktap_diag("%d sharers, most pages_sharing seen %ld, full_scans %ld",
		  started, most_sharing, ksm_read("full_scans"));
	CHECK(started == rounds * per_round, "%d of %d forked", started,
	      rounds * per_round);
	CHECK(failed == 0, "%d sharers saw wrong content", failed);
	CHECK(most_sharing > 0, "pages were merged meanwhile");
	CHECK(ksm_write("pages_to_scan", 1000) == 0, "pages_to_scan 1000");
	CHECK(ksm_wait_counts(0, 0, 0, 0), "all counters back to 0");
	CHECK(ksm_read("ksm_zero_pages") <= 0, "ksm_zero_pages %ld",
	      ksm_read("ksm_zero_pages"));
	check_healthy();
	ktap_result(checks_passed(), "exit_during_scan");
}

/* Pages of the area whose entries ksmd forgets, and of the new area. */
#define FORGET_PAGES	65536
#define NEW_PAGES	64

/* What forget_race_kid() found, as its exit status. */
enum { RACE_HIT, RACE_MISSED, RACE_UNMERGED, RACE_CONTENT, RACE_SETUP };

static long rmap_items(void)
{
	return ksm_stat(0, "ksm_rmap_items");
}

/* A step of forget_race_kid() failed: say which, for the parent's log. */
static int race_setup(const char *what)
{
	ktap_diag("forget race: %s failed (%s)", what, strerror(errno));
	fflush(stdout);
	return RACE_SETUP;
}

static void *step_thread(void *ok)
{
	*(bool *)ok = ksm_step();
	return NULL;
}

/*
 * In a child of its own, ksmd in step mode (one full scan when asked),
 * the child having made every area it inherited unmergeable (one above A
 * would keep ksmd from finding the mm without one; the parent keeps a page
 * of its own mergeable, so that ksmd scans whatever becomes of the
 * child's mm): a big area A, tracked
 * by ksmd, is made unmergeable between two scans, so that the next scan,
 * finding no mergeable area left, forgets A's entries over several
 * steps; as soon as it has begun, area B below A is made mergeable.
 * Whether it began in time shows in the entries left right after. B must
 * merge in the scans after all the same.
 */
static int forget_race_kid(void)
{
	size_t len = (NEW_PAGES + 1 + FORGET_PAGES) * page_size;
	char *res = mmap(NULL, len, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int prot = PROT_READ | PROT_WRITE, flags, s;
	bool hit, stepped = false;
	pthread_t th;
	char *a, *b;

	flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
	if (res == MAP_FAILED)
		return race_setup("mmap");
	/* Every area: the holes between them make it fail with ENOMEM. */
	if (madvise((void *)page_size, (size_t)0 - 2 * page_size,
		    MADV_UNMERGEABLE) && errno != ENOMEM)
		return race_setup("MADV_UNMERGEABLE of all");
	b = mmap(res, NEW_PAGES * page_size, prot, flags, -1, 0);
	a = mmap(res + (NEW_PAGES + 1) * page_size, FORGET_PAGES * page_size,
		 prot, flags, -1, 0);
	if (a == MAP_FAILED || b == MAP_FAILED)
		return race_setup("mmap of A and B");
	for (size_t i = 0; i < FORGET_PAGES; i++)
		fill_page(a, i, 0x7a);
	for (size_t i = 0; i < NEW_PAGES; i++)
		fill_pattern(b + i * page_size, 0x7b, i % (NEW_PAGES / 2));
	if (ksm_step_mode() ||
	    ksm_write("pages_to_scan", 4 * FORGET_PAGES) ||
	    merge_pages(a, FORGET_PAGES))
		return race_setup("step mode");
	for (s = 0; s < 3 && rmap_items() < FORGET_PAGES; s++)
		if (!ksm_step())
			return race_setup("a scan of A");
	if (rmap_items() < FORGET_PAGES)
		return race_setup("tracking A");
	if (madvise(a, FORGET_PAGES * page_size, MADV_UNMERGEABLE) ||
	    pthread_create(&th, NULL, step_thread, &stepped))
		return race_setup("MADV_UNMERGEABLE of A");
	for (double end = monotonic_seconds() + KSM_WAIT_SECONDS;
	     rmap_items() >= FORGET_PAGES;)
		if (monotonic_seconds() > end)
			return race_setup("forgetting A");
	if (merge_pages(b, NEW_PAGES))
		return race_setup("MADV_MERGEABLE of B");
	hit = rmap_items() > 0;
	if (pthread_join(th, NULL) || !stepped)
		return race_setup("the scan that forgets");
	for (s = 0; s < 4 && self_merging_pages() < NEW_PAGES; s++)
		if (!ksm_step())
			return race_setup("a scan after");
	if (self_merging_pages() < NEW_PAGES)
		return hit ? RACE_UNMERGED : RACE_MISSED;
	for (size_t i = 0; i < NEW_PAGES; i++)
		if (!holds_pattern(b + i * page_size, 0x7b,
				   i % (NEW_PAGES / 2)))
			return RACE_CONTENT;
	return hit ? RACE_HIT : RACE_MISSED;
}

/*
 * mainline unregisters an mm only after a walk under one hold of its
 * mmap_lock found no mergeable VMA in it: a VMA made mergeable meanwhile
 * is scanned. Tried until MADV_MERGEABLE lands while ksmd is still
 * forgetting (at most four times); the new area must merge every time,
 * within four scans.
 */
static void test_madvise_while_forgetting(void)
{
	int status = RACE_SETUP, tries = 0;
	/* Registered throughout: ksmd scans, whatever becomes of the child. */
	char *keep = map_pages(1);

	begin();
	CHECK(ksm_reset() == 0, "reset");
	CHECK(merge_pages(keep, 1) == 0, "madvise");
	while (tries++ < 4) {
		pid_t pid;

		fflush(stdout);	/* the child prints: not this twice */
		pid = fork();

		if (pid == 0)
			_exit(forget_race_kid());
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status)) {
			status = RACE_SETUP;
			break;
		}
		status = WEXITSTATUS(status);
		CHECK(ksm_reset() == 0, "reset");
		if (status != RACE_MISSED)
			break;
	}
	ktap_diag("%d tries, the last %s", tries - (tries > 4),
		  status == RACE_HIT ? "while ksmd forgot" :
		  status == RACE_MISSED ? "after ksmd forgot" : "failed");
	CHECK(status == RACE_HIT || status == RACE_MISSED,
	      "the new area: %s", status == RACE_UNMERGED ? "never merged" :
	      status == RACE_CONTENT ? "wrong content" : "setup failed");
	munmap(keep, page_size);
	check_healthy();
	ktap_result(checks_passed(), "madvise_while_forgetting");
}

int main(void)
{
	time_t started = time(NULL);

	ksm_save_settings();
	ktap_plan(10);
	test_mlock();
	test_mprotect();
	test_mremap();
	test_dontneed();
	test_free();
	test_cold();
	test_uffd_wp();
	test_fork();
	test_exit_midscan();
	test_madvise_while_forgetting();
	ktap_diag("%ld s", (long)(time(NULL) - started));
	return ktap_finish();
}
