// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_request.c - merge on request (MADV_MERGE, samepage's): a range is
 * merged in the caller's context and the saving is there when the call
 * returns, whether ksmd scans or not, as long as run is 1. Stock rejects
 * the advice with EINVAL, and every test here skips there.
 *
 *   request_image: ksmd idle (run=1, pages_to_scan=0), NKIDS processes
 *     load one image of IMAGE pages and each asks for it to be merged, all
 *     at once. When the last request returns, at least 90% of the saving
 *     ksmd would reach is there (pages_sharing); every page holds its
 *     content; a write to a merged page copies it (cow_ksm) and leaves the
 *     others' content alone.
 *   request_with_ksmd: the same for two processes with ksmd running.
 *   request_after_passes: one process loads and merges on request; ksmd
 *     makes two full scans (and no more than the 16 that candidates of a
 *     request last: it sleeps between batches) and stops; a second process loads the same
 *     image and as much again of its own, and merges on request: it finds
 *     the first one's pages, whose own visits in the pass under way ksmd
 *     had not made yet (a request's candidates outlast ksmd's pass), and
 *     whose entries the candidate table keeps when the second request
 *     grows it; at least 90% of the first one's pages are merged when the
 *     request returns, content intact.
 *   request_errors: MADV_MERGE fails where MADV_MERGEABLE fails and with
 *     its error (unaligned start, wrapping length, a hole: EINVAL, EINVAL,
 *     ENOMEM, the mapped part merged all the same), and passes over what
 *     MADV_MERGEABLE passes over (a shared mapping, the VM_PFNMAP vvar)
 *     without merging it; a bad pidfd is EBADF.
 *   request_remote: process_madvise() merges what another process made
 *     mergeable itself, and nothing else: a range it never advised stays
 *     unmergeable (smaps "mg") and unmerged, and so does all of a process
 *     that said PR_SET_MEMORY_MERGE 1 and then 0.
 *   request_ksmd_off: with run=0 (KSM stopped) a request merges nothing,
 *     returns 0 and leaves the range mergeable: ksmd merges it once run
 *     is 1 again, content intact.
 *   request_repeated: one range of unique pages requested again and
 *     again costs the candidate table no more than the first request
 *     did: general_profit, which subtracts the table's size, stays.
 *   request_ksmd_busy: ksmd pinned to CPU 0 with pages_to_scan 0 and
 *     sleep_millisecs 0, batches of nothing back to back, while a
 *     loader's fresh pages wait in CPU 0's LRU batch: a request from CPU
 *     1, which drains every CPU's batches, completes and merges (ksmd
 *     lets the CPU go between batches, even without preemption).
 *   request_domains: under merge_domain=process two processes' equal pages
 *     stay apart, and one process's own copies merge.
 *   request_max_page_sharing: eight mappings of one content under
 *     max_page_sharing=4 make two KSM pages of four mappings each.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ksmtest.h"

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE	67
#endif

#ifndef MADV_MERGE
#define MADV_MERGE	26
#endif

#define NKIDS		16
#define IMAGE		16384		/* 64 MiB of 4 KiB pages */
#define SEED		0x5e
#define W		8		/* pages each process writes after */

/* Stock has no such advice: EINVAL for a range MADV_MERGEABLE takes. */
static bool request_supported(void)
{
	char *p = map_pages(1);
	int ret = madvise(p, page_size, MADV_MERGE) ? errno : 0;

	munmap(p, page_size);
	return ret != EINVAL;
}

static void diag_counts(void)
{
	ktap_diag("pages_shared %ld, pages_sharing %ld, pages_unshared %ld",
		  ksm_read("pages_shared"), ksm_read("pages_sharing"),
		  ksm_read("pages_unshared"));
}

static int merge_now(void *addr, size_t pages)
{
	return madvise(addr, pages * page_size, MADV_MERGE) ? -errno : 0;
}

/*
 * A loader: maps and fills the image, says 'r'; at 'm' requests the merge
 * ('k', or 'e' if it failed); at 'c' checks the image ('k'/'x'); at 'w'
 * writes its first W pages with its own seed and checks all ('k'/'x').
 */
static int kid_loader(void *arg, int i, int cmd, int reply)
{
	size_t pages = *(size_t *)arg;
	char *p = map_pages(pages);
	bool written = false;
	char c;

	for (size_t j = 0; j < pages; j++)
		fill_page(p, j, SEED);
	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		size_t bad = 0;

		if (c == 'm') {
			kid_reply(reply, merge_now(p, pages) ? 'e' : 'k');
			continue;
		}
		if (c == 'w') {
			for (size_t j = 0; j < W; j++)
				fill_page(p, j, SEED + 1 + i);
			written = true;
		}
		for (size_t j = 0; j < pages; j++)
			bad += !page_holds(p, j, written && j < W ?
					   SEED + 1 + i : SEED);
		kid_reply(reply, bad ? 'x' : 'k');
	}
	munmap(p, pages * page_size);
	return 0;
}

static bool all_are(const char *r, int n, char want)
{
	for (int i = 0; i < n; i++)
		if (r[i] != want)
			return false;
	return true;
}

/*
 * @n loaders of @pages pages each merge on request; with @ksmd_on, ksmd
 * runs meanwhile. Checks the saving right after the last request returns,
 * the content, and copy on write.
 */
static void loaders_merge(int n, size_t pages, bool ksmd_on)
{
	long full = (long)(n - 1) * pages, sharing, cow;
	char r[NKIDS];
	struct kids k;
	double t;

	CHECK(ksm_reset() == 0, "reset");
	if (!ksmd_on)
		CHECK(ksm_idle() == 0, "ksmd idle");
	CHECK(kids_start(&k, n, kid_loader, &pages) == 0, "fork");
	CHECK(kids_collect(&k, r) && all_are(r, n, 'r'), "loaded");
	t = monotonic_seconds();
	CHECK(kids_sync(&k, 'm', r) && all_are(r, n, 'k'), "requests");
	t = monotonic_seconds() - t;
	sharing = ksm_read("pages_sharing");
	ktap_diag("%d requests of %zu pages: %.2f s, pages_shared %ld, pages_sharing %ld of %ld",
		  n, pages, t, ksm_read("pages_shared"), sharing, full);
	CHECK(sharing * 10 >= full * 9, "saving %ld, want 90%% of %ld",
	      sharing, full);
	CHECK(kids_sync(&k, 'c', r) && all_are(r, n, 'k'), "content");

	CHECK(ksm_pause() == 0, "run=0");
	cow = vmstat("cow_ksm");
	CHECK(kids_sync(&k, 'w', r) && all_are(r, n, 'k'), "after writes");
	CHECK(vmstat("cow_ksm") >= cow + n * W, "cow_ksm %ld -> %ld, want +%d",
	      cow, vmstat("cow_ksm"), n * W);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
	CHECK(ksm_resume() == 0, "run=1");
}

static void test_image(void)
{
	loaders_merge(NKIDS, IMAGE, false);
	ktap_result(checks_passed(), "request_image");
}

static void test_with_ksmd(void)
{
	loaders_merge(2, 1024, true);
	ktap_result(checks_passed(), "request_with_ksmd");
}

/*
 * Instances of one image started one after the other, with ksmd passes
 * between them: the second request pairs with what the first one left.
 * First ksmd makes passes over one page, more than a request's
 * candidates last (16), so that the candidate table is sized for a pass
 * that looked up nothing; the first request then sizes it for its own
 * pages, and the second one, twice as large, must grow it.
 */
static void test_after_passes(void)
{
	size_t pages = 1024, more = 2 * pages;
	struct kids a, b;
	char r[2], *one;

	CHECK(ksm_reset() == 0, "reset");
	one = map_pages(1);
	CHECK(merge_pages(one, 1) == 0, "madvise");
	CHECK(ksm_wait_scans(20), "passes over one page");
	munmap(one, page_size);
	CHECK(ksm_idle() == 0, "ksmd idle");
	CHECK(kids_start(&a, 1, kid_loader, &pages) == 0, "fork a");
	CHECK(kids_collect(&a, r) && r[0] == 'r', "a loaded");
	CHECK(kids_sync(&a, 'm', r) && r[0] == 'k', "a's request");
	/*
	 * Passes over a's pages, which held still, are quick: at full speed
	 * more than the 16 a request's candidates last (SP_CE_LASTS) could
	 * go by while this waits for two. Five batches and sleeps a pass.
	 */
	CHECK(ksm_write("pages_to_scan", 256) == 0, "pages_to_scan");
	CHECK(ksm_write("sleep_millisecs", 50) == 0, "sleep_millisecs");
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_scans(2), "two full scans");
	CHECK(ksm_idle() == 0, "ksmd idle");
	/* Twice the pages: the table the first request sized must grow. */
	CHECK(kids_start(&b, 1, kid_loader, &more) == 0, "fork b");
	CHECK(kids_collect(&b, r) && r[0] == 'r', "b loaded");
	CHECK(kids_sync(&b, 'm', r) && r[0] == 'k', "b's request");
	diag_counts();
	CHECK(ksm_read("pages_sharing") * 10 >= (long)pages * 9,
	      "saving %ld, want 90%% of %zu", ksm_read("pages_sharing"),
	      pages);
	CHECK(kids_sync(&a, 'c', r) && r[0] == 'k', "a's content");
	CHECK(kids_sync(&b, 'c', r) && r[0] == 'k', "b's content");
	kids_send(&a, 'q');
	kids_send(&b, 'q');
	CHECK(kids_wait(&a) && kids_wait(&b), "children");
	CHECK(ksm_resume() == 0, "run=1");
	ktap_result(checks_passed(), "request_after_passes");
}

/* Both advices' results on one range: 0 or -errno each. */
static void same_result(void *addr, size_t len, const char *what, int want)
{
	int a = madvise(addr, len, MADV_MERGEABLE) ? -errno : 0;
	int b = madvise(addr, len, MADV_MERGE) ? -errno : 0;

	CHECK(a == want && b == want, "%s: MADV_MERGEABLE %d, MADV_MERGE %d, want %d",
	      what, a, b, want);
}

/* The address range of the [vvar] mapping, or NULL. */
static void *vvar_range(size_t *len)
{
	char line[256];
	void *start = NULL;
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long s, e;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vvar]") &&
		    sscanf(line, "%lx-%lx", &s, &e) == 2) {
			start = (void *)s;
			*len = e - s;
			break;
		}
	fclose(f);
	return start;
}

static int pidfd_open(pid_t pid)
{
	return syscall(SYS_pidfd_open, pid, 0);
}

static long merge_remote(int pidfd, void *addr, size_t len)
{
	struct iovec iov = { addr, len };

	return syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_MERGE, 0);
}

/*
 * A child with two regions of two equal pages each, waiting for its
 * parent's requests: it made the first mergeable itself (child 0), or all
 * its memory mergeable and then took that back with PR_SET_MEMORY_MERGE
 * 0 (child 1); the second it never advised. Sends both addresses; 'c'
 * replies 'k' when the first region alone is merged, 'n' when neither is
 * (either content intact; 'x' if not); 'v' whether the second region is
 * mergeable ('y'/'n').
 */
static int kid_target(void *arg, int i, int cmd, int reply)
{
	char *p[2] = { map_pages(2), map_pages(2) };
	bool ok;
	char c;

	for (int r = 0; r < 2; r++) {
		fill_page(p[r], 0, SEED + r);
		fill_page(p[r] + page_size, 0, SEED + r);
	}
	if (i == 0 && merge_pages(p[0], 2))
		return 1;
	if (i == 1 && (prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) ||
		       prctl(PR_SET_MEMORY_MERGE, 0, 0, 0, 0)))
		return 1;
	if (write(reply, p, sizeof(p)) != sizeof(p))
		return 1;
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		if (c == 'v') {
			kid_reply(reply, mergeable_flag(p[1]) == 1 ? 'y' : 'n');
			continue;
		}
		ok = true;
		for (int r = 0; r < 2; r++)
			ok = ok && page_holds(p[r], 0, SEED + r) &&
			     page_holds(p[r] + page_size, 0, SEED + r);
		kid_reply(reply, !ok ? 'x' : self_merging_pages() == 2 ? 'k' :
			  self_merging_pages() == 0 ? 'n' : 'u');
	}
	return 0;
}

static void test_errors(void)
{
	char *p = map_pages(4), *shared, *vvar;
	size_t vlen = 0;
	long ret;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_idle() == 0, "ksmd idle");
	fill_page(p, 0, SEED);
	fill_page(p + 2 * page_size, 0, SEED);
	same_result(p + 1, page_size, "unaligned start", -EINVAL);
	same_result(p, (size_t)-page_size * 2, "wrapping length", -EINVAL);
	/* A hole at page 1: the pages around it still merge. */
	CHECK(munmap(p + page_size, page_size) == 0, "hole");
	CHECK(madvise(p, 3 * page_size, MADV_MERGE) == -1 && errno == ENOMEM,
	      "hole: errno %d", errno);
	CHECK(ksm_read("pages_sharing") == 1, "merged around the hole: %ld",
	      ksm_read("pages_sharing"));
	CHECK(page_holds(p, 0, SEED) && page_holds(p + 2 * page_size, 0, SEED),
	      "content around the hole");

	shared = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shared != MAP_FAILED, "shared mapping");
	fill_page(shared, 0, SEED + 9);
	fill_page(shared + page_size, 0, SEED + 9);
	same_result(shared, 2 * page_size, "shared mapping", 0);
	vvar = vvar_range(&vlen);
	if (vvar)
		same_result(vvar, vlen, "vvar (VM_PFNMAP)", 0);
	else
		ktap_diag("no [vvar] mapping: VM_PFNMAP not tried");
	CHECK(ksm_read("pages_shared") == 1 && ksm_read("pages_sharing") == 1,
	      "nothing more merged: shared %ld sharing %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
	CHECK(page_holds(shared, 0, SEED + 9) &&
	      page_holds(shared + page_size, 0, SEED + 9), "shared content");
	munmap(shared, 2 * page_size);

	ret = merge_remote(-1, p, page_size);
	CHECK(ret == -1 && errno == EBADF, "bad pidfd: %ld errno %d", ret,
	      errno);
	munmap(p, 4 * page_size);
	CHECK(ksm_reset() == 0, "reset");
	ktap_result(checks_passed(), "request_errors");
}

/* process_madvise(MADV_MERGE) of both regions of kid_target() @i. */
static void remote_both(struct kids *k, int i, char want)
{
	char *addr[2] = { NULL, NULL };
	long ret;
	int pidfd;
	char c;

	CHECK(read(k->from_kid[i], addr, sizeof(addr)) == sizeof(addr),
	      "child %d's addresses", i);
	pidfd = pidfd_open(k->pid[i]);
	CHECK(pidfd >= 0, "pidfd_open: errno %d", errno);
	for (int r = 0; r < 2; r++) {
		ret = merge_remote(pidfd, addr[r], 2 * page_size);
		CHECK(ret == (long)(2 * page_size),
		      "child %d region %d: process_madvise %ld errno %d", i, r,
		      ret, errno);
	}
	close(pidfd);
	if (!CHECK(kid_call(k, i, 'c', &c), "child %d gone", i))
		return;
	CHECK(c == want, "child %d merged: %c, want %c", i, c, want);
	CHECK(kid_call(k, i, 'v', &c) && c == 'n',
	      "child %d: a region it never advised made mergeable", i);
}

static void test_remote(void)
{
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_idle() == 0, "ksmd idle");
	CHECK(kids_start(&k, 2, kid_target, NULL) == 0, "fork");
	remote_both(&k, 0, 'k');
	remote_both(&k, 1, 'n');
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
	CHECK(ksm_reset() == 0, "reset");
	ktap_result(checks_passed(), "request_remote");
}

static bool two_merged(void *arg)
{
	return ksm_read("pages_sharing") >= *(long *)arg;
}

/*
 * run=0: the request leaves the range mergeable and merges nothing;
 * ksmd merges it once run is 1.
 */
static void test_ksmd_off(void)
{
	long full = 256;
	size_t pages = full;
	char r[2];
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(kids_start(&k, 2, kid_loader, &pages) == 0, "fork");
	CHECK(kids_collect(&k, r) && all_are(r, 2, 'r'), "loaded");
	CHECK(kids_sync(&k, 'm', r) && all_are(r, 2, 'k'), "requests");
	diag_counts();
	CHECK(ksm_read("pages_shared") == 0 && ksm_read("pages_sharing") == 0,
	      "merged with run=0");
	CHECK(kids_sync(&k, 'c', r) && all_are(r, 2, 'k'), "content");
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_until(two_merged, &full, 20), "ksmd merged them");
	CHECK(kids_sync(&k, 'c', r) && all_are(r, 2, 'k'), "content after");
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
	ktap_result(checks_passed(), "request_ksmd_off");
}

/* kid_loader() on CPU @i % 2. */
static int kid_pinned_loader(void *arg, int i, int cmd, int reply)
{
	if (pin_to_cpu(0, i % 2))
		return 1;
	return kid_loader(arg, i, cmd, reply);
}

static void test_ksmd_busy(void)
{
	size_t pages = 1024;
	cpu_set_t was;
	struct kids k;
	char r[2];

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(kids_start(&k, 2, kid_pinned_loader, &pages) == 0, "fork");
	CHECK(kids_collect(&k, r) && all_are(r, 2, 'r'), "loaded");
	if (!CHECK(ksmd_pin(0, &was) == 0, "ksmd on CPU 0"))
		goto out;
	CHECK(ksm_write("pages_to_scan", 0) == 0 &&
	      ksm_write("sleep_millisecs", 0) == 0 && ksm_resume() == 0,
	      "ksmd busy");
	CHECK(kid_call(&k, 1, 'm', &r[1]) && r[1] == 'k', "request on CPU 1");
	CHECK(kid_call(&k, 0, 'm', &r[0]) && r[0] == 'k', "request on CPU 0");
	diag_counts();
	CHECK(ksm_read("pages_sharing") * 10 >= (long)pages * 9,
	      "saving %ld, want 90%% of %zu", ksm_read("pages_sharing"),
	      pages);
	CHECK(kids_sync(&k, 'c', r) && all_are(r, 2, 'k'), "content");
	sched_setaffinity(ksmd_pid(), sizeof(was), &was);
out:
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
	CHECK(ksm_reset() == 0, "reset");
	ktap_result(checks_passed(), "request_ksmd_busy");
}

/* A range of unique pages, requested again and again. */
static void test_repeated(void)
{
	size_t pages = 8192;
	char *p = map_pages(pages);
	long before, after;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_idle() == 0, "ksmd idle");
	for (size_t j = 0; j < pages; j++)
		fill_page(p, j, SEED + 3);
	CHECK(merge_now(p, pages) == 0, "first request");
	before = ksm_read("general_profit");
	for (int i = 0; i < 24; i++)
		CHECK(merge_now(p, pages) == 0, "request %d", i);
	after = ksm_read("general_profit");
	ktap_diag("general_profit %ld after one request, %ld after 25; pages_unshared %ld",
		  before, after, ksm_read("pages_unshared"));
	/* Each entry is ten bytes: a page added twice would cost 80 KiB. */
	CHECK(after >= before - 16384, "the index grew by %ld bytes",
	      before - after);
	CHECK(!pages_wrong(p, pages, SEED + 3), "content");
	munmap(p, pages * page_size);
	CHECK(ksm_reset() == 0, "reset");
	ktap_result(checks_passed(), "request_repeated");
}

/* Child 0 holds two copies of a page, child 1 one; 'm' merges, 'c' checks. */
static int kid_domain(void *arg, int i, int cmd, int reply)
{
	int copies = i == 0 ? 2 : 1;
	char *p = map_pages(copies);
	char c;

	for (int j = 0; j < copies; j++)
		fill_page(p + j * page_size, 0, SEED);
	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		if (c == 'm')
			kid_reply(reply, merge_now(p, copies) ? 'e' : 'k');
		else
			kid_reply(reply, page_holds(p, 0, SEED) &&
				  page_holds(p + (copies - 1) * page_size, 0,
					     SEED) ? 'k' : 'x');
	}
	return 0;
}

static void test_domains(void)
{
	char r[2];
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_idle() == 0, "ksmd idle");
	CHECK(ksm_write_str("merge_domain", "process") == 0,
	      "merge_domain=process");
	CHECK(kids_start(&k, 2, kid_domain, NULL) == 0, "fork");
	CHECK(kids_collect(&k, r), "ready");
	CHECK(kids_sync(&k, 'm', r) && all_are(r, 2, 'k'), "requests");
	diag_counts();
	/* Child 0's two copies share a page; child 1's stays its own. */
	CHECK(ksm_read("pages_shared") == 1 && ksm_read("pages_sharing") == 1,
	      "shared %ld sharing %ld, want 1 and 1",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
	CHECK(kids_sync(&k, 'c', r) && all_are(r, 2, 'k'), "content");
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
	CHECK(ksm_reset() == 0, "reset");
	ktap_result(checks_passed(), "request_domains");
}

static void test_max_page_sharing(void)
{
	size_t one = 1;
	char r[8];
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_idle() == 0, "ksmd idle");
	CHECK(ksm_write("max_page_sharing", 4) == 0, "max_page_sharing=4");
	CHECK(kids_start(&k, 8, kid_loader, &one) == 0, "fork");
	CHECK(kids_collect(&k, r), "ready");
	CHECK(kids_sync(&k, 'm', r) && all_are(r, 8, 'k'), "requests %.8s",
	      r);
	diag_counts();
	CHECK(ksm_read("pages_shared") == 2 && ksm_read("pages_sharing") == 6,
	      "shared %ld sharing %ld, want 2 and 6",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
	CHECK(kids_sync(&k, 'c', r) && all_are(r, 8, 'k'), "content");
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children");
	CHECK(ksm_reset() == 0, "reset");
	ktap_result(checks_passed(), "request_max_page_sharing");
}

int main(void)
{
	static const char *const names[] = {
		"request_image", "request_with_ksmd", "request_after_passes",
		"request_errors", "request_remote", "request_ksmd_off",
		"request_repeated", "request_ksmd_busy", "request_domains",
		"request_max_page_sharing",
	};

	ksm_save_settings();
	if (ksm_reset() || !request_supported())
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no MADV_MERGE (not samepage)");
	ktap_plan(ARRAY_SIZE(names));
	test_image();
	test_with_ksmd();
	test_after_passes();
	test_errors();
	test_remote();
	test_ksmd_off();
	test_repeated();
	test_ksmd_busy();
	test_domains();
	test_max_page_sharing();
	return ktap_finish();
}
