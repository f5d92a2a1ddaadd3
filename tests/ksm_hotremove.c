// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_hotremove.c - KSM pages and memory hot-remove.
 *
 * scripts/boot.sh gives the guest two 128 MiB pc-dimm devices, which the
 * kernel adds but leaves offline. The test onlines one DIMM's memory
 * blocks movable, keeps the pages whose frames landed in it (movable
 * allocations take ZONE_MOVABLE first), and ejects it through ACPI (sysfs
 * "eject" of its PNP0C80 device, the path a hot-remove request takes):
 * the kernel offlines the memory, removes it with its memmap, and QEMU
 * unplugs the DIMM.
 *
 * stale: pairs of pages merged inside the DIMM; ksmd stopped; every sharer
 * writes its page, so each KSM page is freed while its KSM node still
 * names its frame. The DIMM goes, then ksmd runs several passes: a node
 * that still named a removed frame would make ksmd read a memmap that is
 * no longer there (mainline drops such nodes from its memory notifier).
 * No splat, every page holds what was written, nothing stays shared.
 *
 * live: pairs merged inside a second DIMM and kept merged: removing it
 * migrates the KSM pages out. Every sharer still reads its content, the
 * pairs still share one frame, now outside the DIMM, and ksmd goes on.
 *
 * fresh_kernel (samepage only: use_fresh_pages): the first DIMM onlined
 * with online_kernel, which makes it the node's ZONE_NORMAL, where the
 * pool of fresh frames and the KSM pages made from it are then taken.
 * Pairs merged, then every block of the DIMM is offlined: the pool's free
 * frames must not make a block unmovable (memory offline refuses such a
 * block before any notifier runs). Content and sharing survive, outside
 * the DIMM. The blocks stay offline, for "stale" to online them movable.
 *
 * Skipped when the guest kernel has no memory hotplug; a guest without
 * the DIMMs (a boot not through scripts/boot.sh) fails it.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

#define MEMDIR		"/sys/devices/system/memory"
#define N		64	/* pairs */
#define AREA		8192	/* pages mapped to find 2N frames in a DIMM */
#define MAXBLOCKS	64	/* memory blocks a DIMM may span */
#define EJECT_WAIT	120	/* seconds an eject may take */
#define ACPIDEVS	"/sys/bus/acpi/devices"
#define MAXDIMMS	8
#define MPOL_BIND	2

struct dimm {
	char dev[128];		/* its ACPI device in sysfs */
	int nblocks;
	long block[MAXBLOCKS];	/* memory block numbers */
	unsigned long first_pfn, end_pfn;
	int node;
};

static unsigned long block_pages;

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/*
 * The ACPI memory device of DIMM @idx (the PNP0C80 devices by name, in
 * QEMU's slot order) into @path; false if there is none.
 */
static bool dimm_dev(int idx, char *path, size_t size)
{
	char names[MAXDIMMS][NAME_MAX + 1];
	struct dirent *d;
	DIR *dir = opendir(ACPIDEVS);
	int n = 0;

	if (!dir)
		return false;
	while ((d = readdir(dir)) && n < MAXDIMMS)
		if (!strncmp(d->d_name, "PNP0C80:", 8))
			strcpy(names[n++], d->d_name);
	closedir(dir);
	if (idx >= n)
		return false;
	qsort(names, n, sizeof(names[0]), by_name);
	snprintf(path, size, ACPIDEVS "/%.64s", names[idx]);
	return true;
}

static int block_node(long block)
{
	char path[128];
	struct stat st;

	for (int node = 0; node < 64; node++) {
		snprintf(path, sizeof(path), MEMDIR "/memory%ld/node%d", block,
			 node);
		if (!stat(path, &st))
			return node;
	}
	return -1;
}

/* Online @block as @how says ("online_movable", "online_kernel"). */
static bool online_as(long block, const char *how)
{
	char path[128], state[32];

	snprintf(path, sizeof(path), MEMDIR "/memory%ld/state", block);
	if (read_file(path, state, sizeof(state)))
		return false;
	if (!strcmp(state, "online"))
		return true;
	return write_file(path, how) == 0;
}

/* Offline @block: 0 or -errno. */
static int offline(long block)
{
	char path[128];

	snprintf(path, sizeof(path), MEMDIR "/memory%ld/state", block);
	return write_file(path, "offline");
}

/*
 * Find DIMM @idx's memory blocks (the ACPI device's physical_node links)
 * and online them as @how says; false if it has none.
 */
static bool plug_as(struct dimm *d, int idx, const char *how)
{
	char path[300], link[256], *base;
	ssize_t len;

	if (!dimm_dev(idx, d->dev, sizeof(d->dev)))
		return false;
	d->nblocks = 0;
	for (int i = 0; i < MAXBLOCKS; i++) {
		if (i)
			snprintf(path, sizeof(path), "%s/physical_node%d",
				 d->dev, i);
		else
			snprintf(path, sizeof(path), "%s/physical_node", d->dev);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			break;
		link[len] = '\0';
		base = strrchr(link, '/');
		if (base && sscanf(base, "/memory%ld",
				   &d->block[d->nblocks]) == 1)
			d->nblocks++;
	}
	if (!d->nblocks)
		return false;
	d->first_pfn = d->block[0] * block_pages;
	d->end_pfn = (d->block[d->nblocks - 1] + 1) * block_pages;
	d->node = block_node(d->block[0]);
	for (int i = 0; i < d->nblocks; i++)
		if (!CHECK(online_as(d->block[i], how), "%s memory%ld", how,
			   d->block[i]))
			return false;
	ktap_diag("%s: %d blocks, pfns %#lx-%#lx, node %d", d->dev,
		  d->nblocks, d->first_pfn, d->end_pfn, d->node);
	return true;
}

static bool plug(struct dimm *d, int idx)
{
	return plug_as(d, idx, "online_movable");
}

/*
 * Eject @d through ACPI, as a hot-remove request does: the kernel offlines
 * its memory (migrating what is in use), removes it with its memmap, and
 * QEMU unplugs the DIMM. True once its memory blocks are gone.
 */
static bool unplug(struct dimm *d)
{
	double start = monotonic_seconds();
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "%s/eject", d->dev);
	if (!CHECK(write_file(path, "1") == 0, "eject %s", d->dev))
		return false;
	while (monotonic_seconds() < start + EJECT_WAIT) {
		bool gone = true;

		for (int i = 0; i < d->nblocks && gone; i++) {
			snprintf(path, sizeof(path), MEMDIR "/memory%ld",
				 d->block[i]);
			gone = stat(path, &st) != 0;
		}
		if (gone) {
			ktap_diag("%s removed in %.1f s", d->dev,
				  monotonic_seconds() - start);
			return true;
		}
		usleep(100000);
	}
	return false;
}

static bool in_dimm(const struct dimm *d, unsigned long pfn)
{
	return pfn >= d->first_pfn && pfn < d->end_pfn;
}

/*
 * Map AREA pages bound to the DIMM's node, fault them in, and pick 2N
 * whose frames are in the DIMM: pair i is (*a)[i], (*b)[i]. The pairs get
 * pattern (@seed, i), every other page one of its own. Returns the area.
 */
static char *pages_in_dimm(const struct dimm *d, unsigned int seed,
			   char **a, char **b)
{
	unsigned long mask = 1UL << d->node;
	char *p = map_unfaulted(AREA);
	int found = 0;

	if (d->node >= 0 &&
	    syscall(__NR_mbind, p, AREA * page_size, MPOL_BIND, &mask,
		    sizeof(mask) * 8, 0))
		ktap_diag("mbind: %s", strerror(errno));
	for (size_t i = 0; i < AREA; i++) {
		char *page = p + i * page_size;

		fill_page(p, i, seed + 1);
		if (found < 2 * N && in_dimm(d, page_pfn(page))) {
			if (found % 2)
				b[found / 2] = page;
			else
				a[found / 2] = page;
			fill_pattern(page, seed, found / 2);
			found++;
		}
	}
	ktap_diag("%d of %d pages wanted found in the DIMM", found, 2 * N);
	if (found < 2 * N) {
		munmap(p, AREA * page_size);
		return NULL;
	}
	CHECK(merge_pages(p, AREA) == 0, "madvise");
	return p;
}

struct pairs {
	char **a, **b;
};

static bool pairs_merged(void *arg)
{
	struct pairs *pr = arg;

	for (int i = 0; i < N; i++)
		if (page_pfn(pr->a[i]) != page_pfn(pr->b[i]))
			return false;
	return true;
}

static int pairs_in(const struct dimm *d, char **a)
{
	int n = 0;

	for (int i = 0; i < N; i++)
		n += in_dimm(d, page_pfn(a[i]));
	return n;
}

static bool wait_merged(char **a, char **b)
{
	struct pairs pr = { a, b };

	return ksm_wait_until(pairs_merged, &pr, 20);
}

/*
 * Online DIMM @idx and merge N pairs of pattern @seed inside it; the
 * mapped area, or NULL after a failed check.
 */
static char *merged_in_dimm(struct dimm *d, int idx, unsigned int seed,
			    char **a, char **b)
{
	char *p;

	CHECK(ksm_reset() == 0, "reset");
	if (!CHECK(plug(d, idx), "DIMM %d online", idx))
		return NULL;
	p = pages_in_dimm(d, seed, a, b);
	if (!CHECK(p, "pages in the DIMM"))
		return NULL;
	CHECK(wait_merged(a, b), "pairs merged");
	CHECK(pairs_in(d, a) == N, "%d of %d KSM pages in the DIMM",
	      pairs_in(d, a), N);
	return p;
}

/* The N pairs of pattern @seed hold it and share a frame outside @d. */
static void check_moved_out(const struct dimm *d, unsigned int seed, char **a,
			    char **b)
{
	int bad = 0, moved = 0;

	for (int i = 0; i < N; i++) {
		unsigned long pfn = page_pfn(a[i]);

		bad += !holds_pattern(a[i], seed, i) ||
		       !holds_pattern(b[i], seed, i);
		moved += pfn && !in_dimm(d, pfn) && pfn == page_pfn(b[i]);
	}
	CHECK(!bad, "%d pairs lost their content", bad);
	CHECK(moved == N, "%d of %d pairs share a frame outside the DIMM",
	      moved, N);
}

static void test_fresh_kernel(const char *name)
{
	struct dimm d = { 0 };
	char *a[N], *b[N], *p = NULL;
	int splats = kernel_splats(), err;

	if (ksm_read("use_fresh_pages") < 0) {
		ktap_skip_named(name, "no use_fresh_pages (stock)");
		return;
	}
	CHECK(ksm_reset() == 0, "reset");
	if (!CHECK(plug_as(&d, 0, "online_kernel"), "DIMM 0 online_kernel"))
		goto out;
	CHECK(ksm_write("use_fresh_pages", 1) == 0, "use_fresh_pages=1");
	p = pages_in_dimm(&d, 0x4700, a, b);
	if (!CHECK(p, "pages in the DIMM"))
		goto off;
	CHECK(wait_merged(a, b), "pairs merged");
	ktap_diag("%d of %d KSM pages in fresh frames of the DIMM",
		  pairs_in(&d, a), N);
	CHECK(pairs_in(&d, a) > 0, "the pool took frames in the DIMM");
	for (int i = 0; i < d.nblocks; i++) {
		err = offline(d.block[i]);
		CHECK(!err, "offline memory%ld: %s", d.block[i], strerror(-err));
	}
	check_moved_out(&d, 0x4700, a, b);
	munmap(p, AREA * page_size);
off:
	CHECK(ksm_write("use_fresh_pages", 0) == 0, "use_fresh_pages=0");
	/* Whatever happened, leave the blocks offline for "stale". */
	for (int i = 0; i < d.nblocks; i++)
		offline(d.block[i]);
	CHECK(ksm_wait_counts(0, 0, KSM_ANY, KSM_ANY), "nothing shared");
out:
	CHECK(kernel_splats() == splats, "%d new splats in the log",
	      kernel_splats() - splats);
	ktap_result(checks_passed(), "%s", name);
}

static void test_stale(const char *name)
{
	struct dimm d = { 0 };
	char *a[N], *b[N], *p;
	int splats = kernel_splats(), bad = 0;

	p = merged_in_dimm(&d, 0, 0x4800, a, b);
	if (!p)
		goto out;
	/* Every sharer leaves: each KSM page is freed under its node. */
	CHECK(ksm_pause() == 0, "run=0");
	for (int i = 0; i < N; i++) {
		fill_pattern(a[i], 0x4801, i);
		fill_pattern(b[i], 0x4801, N + i);
	}
	CHECK(unplug(&d), "%s removed", d.dev);
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_scans(4), "ksmd scans after the removal");
	for (int i = 0; i < N; i++)
		bad += !holds_pattern(a[i], 0x4801, i) ||
		       !holds_pattern(b[i], 0x4801, N + i) ||
		       in_dimm(&d, page_pfn(a[i]));
	CHECK(!bad, "%d pages lost their content or frame", bad);
	CHECK(ksm_wait_counts(0, 0, KSM_ANY, KSM_ANY), "nothing shared");
	munmap(p, AREA * page_size);
out:
	CHECK(kernel_splats() == splats, "%d new splats in the log",
	      kernel_splats() - splats);
	ktap_result(checks_passed(), "%s", name);
}

static void test_live(const char *name)
{
	struct dimm d = { 0 };
	char *a[N], *b[N], *p;
	int splats = kernel_splats();

	p = merged_in_dimm(&d, 1, 0x4900, a, b);
	if (!p)
		goto out;
	CHECK(unplug(&d), "%s removed with its KSM pages", d.dev);
	check_moved_out(&d, 0x4900, a, b);
	CHECK(ksm_wait_scans(3), "ksmd goes on");
	CHECK(pairs_merged(&(struct pairs){ a, b }), "still merged");
	munmap(p, AREA * page_size);
	CHECK(ksm_wait_counts(0, 0, KSM_ANY, KSM_ANY), "nothing shared");
out:
	CHECK(kernel_splats() == splats, "%d new splats in the log",
	      kernel_splats() - splats);
	ktap_result(checks_passed(), "%s", name);
}

int main(void)
{
	static const char *const names[] = {
		"hotremove_fresh_kernel", "hotremove_stale_nodes",
		"hotremove_live_ksm_pages",
	};
	long bytes;
	struct stat st;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	bytes = 0;
	{
		char buf[32];

		if (!read_file(MEMDIR "/block_size_bytes", buf, sizeof(buf)))
			bytes = strtol(buf, NULL, 16);
	}
	if (bytes <= 0 || stat(MEMDIR "/auto_online_blocks", &st))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no memory hotplug");
	block_pages = bytes / page_size;
	test_fresh_kernel(names[0]);
	test_stale(names[1]);
	test_live(names[2]);
	return ktap_finish();
}
