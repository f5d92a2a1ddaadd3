// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_request.c - merge on request (MADV_MERGE, samepage's): a range is
 * merged in the caller's context and the saving is there when the call
 * returns, ksmd running or not. Stock rejects the advice with EINVAL, and
 * every test here skips there.
 *
 *   request_image: ksmd stopped (run=0), NKIDS processes load one image
 *     of IMAGE pages and each asks for it to be merged, all at once. When
 *     the last request returns, at least 90% of the saving ksmd would
 *     reach is there (pages_sharing); every page holds its content; a
 *     write to a merged page copies it (cow_ksm) and leaves the others'
 *     content alone.
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
 *     without merging it; process_madvise() merges another process's
 *     range, and a bad pidfd is EBADF.
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
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ksmtest.h"

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
		CHECK(ksm_pause() == 0, "run=0");
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
	CHECK(ksm_pause() == 0, "run=0");
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
	CHECK(ksm_pause() == 0, "run=0");
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

/* A child with two equal pages, waiting to be merged by its parent. */
static int kid_target(void *arg, int i, int cmd, int reply)
{
	char *p = map_pages(2);

	fill_page(p, 0, SEED);
	fill_page(p + page_size, 0, SEED);
	if (write(reply, &p, sizeof(p)) != sizeof(p))
		return 1;
	while (kid_wait_cmd(cmd) == 'c')
		kid_reply(reply, page_holds(p, 0, SEED) &&
			  page_holds(p + page_size, 0, SEED) ?
			  (self_merging_pages() == 2 ? 'k' : 'u') : 'x');
	return 0;
}

static void test_errors(void)
{
	char *p = map_pages(4), *shared, *vvar, *addr = NULL;
	size_t vlen = 0;
	struct kids k;
	int pidfd;
	long ret;
	char c;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_pause() == 0, "run=0");
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

	CHECK(kids_start(&k, 1, kid_target, NULL) == 0, "fork");
	CHECK(read(k.from_kid[0], &addr, sizeof(addr)) == sizeof(addr),
	      "child's address");
	pidfd = pidfd_open(k.pid[0]);
	CHECK(pidfd >= 0, "pidfd_open: errno %d", errno);
	ret = merge_remote(pidfd, addr, 2 * page_size);
	CHECK(ret == (long)(2 * page_size), "process_madvise: %ld errno %d",
	      ret, errno);
	CHECK(kid_call(&k, 0, 'c', &c) && c == 'k', "child merged (%c)", c);
	ret = merge_remote(-1, addr, 2 * page_size);
	CHECK(ret == -1 && errno == EBADF, "bad pidfd: %ld errno %d", ret,
	      errno);
	close(pidfd);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "child");
	munmap(p, 4 * page_size);
	CHECK(ksm_resume() == 0, "run=1");
	ktap_result(checks_passed(), "request_errors");
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
	CHECK(ksm_pause() == 0, "run=0");
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
	CHECK(ksm_pause() == 0, "run=0");
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
		"request_errors",
		"request_domains", "request_max_page_sharing",
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
	test_domains();
	test_max_page_sharing();
	return ktap_finish();
}
