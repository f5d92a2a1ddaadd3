// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_notifier.c - the change_pte MMU notifier, through the test driver
 * of CONFIG_KSM_NOTIFIER_TEST (/proc/ksm_notifier_test): notifier A has
 * change_pte, notifier B has only invalidate_range_start/end. When KSM
 * merges our pages, A must be told each address's new PTE, read-only and
 * pointing at the KSM page; when a write breaks COW, A must be told the
 * private copy's PFN, writable. Every change_pte must come inside an
 * invalidation of a range covering its address, and B must see the same
 * invalidations as A and nothing else. Skipped on a kernel without the
 * driver (the stock kernel).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define PAGES 16
#define COW_PAGE 5

enum { EV_START, EV_END, EV_CHANGE, EV_RELEASE };

struct ev {
	char who;		/* 'A' or 'B' */
	int kind;
	unsigned long start;	/* range start, or change_pte's address */
	unsigned long end;	/* range end */
	unsigned long pfn;	/* change_pte */
	int write;		/* change_pte */
};

struct log {
	struct ev *ev;
	int n;
	unsigned long lost;
};

static int nt_fd = -1;

static bool nt_cmd(const char *cmd)
{
	ssize_t len = strlen(cmd);

	return write(nt_fd, cmd, len) == len;
}

static bool parse_line(const char *line, struct ev *e)
{
	char kind[16];

	memset(e, 0, sizeof(*e));
	if (sscanf(line, "%c %15s", &e->who, kind) != 2)
		return false;
	line += 2 + strlen(kind);
	if (!strcmp(kind, "start")) {
		e->kind = EV_START;
		return sscanf(line, " 0x%lx-0x%lx", &e->start, &e->end) == 2;
	}
	if (!strcmp(kind, "end")) {
		e->kind = EV_END;
		return sscanf(line, " 0x%lx-0x%lx", &e->start, &e->end) == 2;
	}
	if (!strcmp(kind, "change_pte")) {
		e->kind = EV_CHANGE;
		return sscanf(line, " 0x%lx pfn=0x%lx write=%d", &e->start,
			      &e->pfn, &e->write) == 3;
	}
	if (!strcmp(kind, "release")) {
		e->kind = EV_RELEASE;
		return true;
	}
	return false;
}

/* Read the driver's whole log into @l; false on error. */
static bool nt_read(struct log *l)
{
	size_t size = 1 << 16, len = 0;
	char *buf = malloc(size), *line, *save;
	unsigned int count;
	ssize_t got;
	bool ok = true;

	l->n = 0;
	l->lost = 0;
	if (!buf || lseek(nt_fd, 0, SEEK_SET) != 0)
		return false;
	while ((got = read(nt_fd, buf + len, size - len - 1)) > 0) {
		len += got;
		if (size - len < 2) {
			size *= 2;
			buf = realloc(buf, size);
			if (!buf)
				return false;
		}
	}
	if (got < 0) {
		free(buf);
		return false;
	}
	buf[len] = '\0';
	line = strtok_r(buf, "\n", &save);
	if (!line || sscanf(line, "events %u lost %lu", &count, &l->lost) != 2) {
		free(buf);
		return false;
	}
	free(l->ev);
	l->ev = calloc(count + 1, sizeof(*l->ev));
	while (l->ev && (line = strtok_r(NULL, "\n", &save))) {
		if (l->n == (int)count || !parse_line(line, &l->ev[l->n])) {
			ktap_diag("bad line from driver: %s", line);
			ok = false;
			break;
		}
		l->n++;
	}
	free(buf);
	return ok && l->ev && l->n == (int)count;
}

static bool covers(const struct ev *r, unsigned long addr)
{
	return r->start <= addr && addr < r->end;
}

/*
 * Is every change_pte of A inside an invalidation of A that covers its
 * address (between its start and its end), and every start ended?
 */
static bool changes_inside_ranges(const struct log *l)
{
	const struct ev *open_[64];
	int nopen = 0;
	bool ok = true;

	for (int i = 0; i < l->n; i++) {
		const struct ev *e = &l->ev[i];
		int j;

		if (e->who != 'A')
			continue;
		switch (e->kind) {
		case EV_START:
			if (nopen == (int)ARRAY_SIZE(open_))
				return false;
			open_[nopen++] = e;
			break;
		case EV_END:
			for (j = nopen - 1; j >= 0; j--)
				if (open_[j]->start == e->start &&
				    open_[j]->end == e->end)
					break;
			if (j < 0) {
				ktap_diag("A end 0x%lx-0x%lx without start",
					  e->start, e->end);
				ok = false;
				break;
			}
			open_[j] = open_[--nopen];
			break;
		case EV_CHANGE:
			for (j = 0; j < nopen; j++)
				if (covers(open_[j], e->start))
					break;
			if (j == nopen) {
				ktap_diag("change_pte 0x%lx outside any invalidation",
					  e->start);
				ok = false;
			}
			break;
		}
	}
	if (nopen) {
		ktap_diag("%d invalidations of A never ended", nopen);
		ok = false;
	}
	return ok;
}

/* The last change_pte A got for @addr; NULL if none. */
static const struct ev *last_change(const struct log *l, unsigned long addr)
{
	const struct ev *found = NULL;

	for (int i = 0; i < l->n; i++)
		if (l->ev[i].who == 'A' && l->ev[i].kind == EV_CHANGE &&
		    l->ev[i].start == addr)
			found = &l->ev[i];
	return found;
}

/* Did @who get an invalidation start and end covering @addr? */
static bool invalidated(const struct log *l, char who, unsigned long addr)
{
	bool started = false;

	for (int i = 0; i < l->n; i++) {
		const struct ev *e = &l->ev[i];

		if (e->who != who || !covers(e, addr))
			continue;
		if (e->kind == EV_START)
			started = true;
		else if (e->kind == EV_END && started)
			return true;
	}
	return false;
}

static int ev_cmp(const void *x, const void *y)
{
	const struct ev *a = x, *b = y;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->end != b->end)
		return a->end < b->end ? -1 : 1;
	return 0;
}

/* @who's invalidation calls, sorted; NULL on allocation failure. */
static struct ev *ranges_of(const struct log *l, char who, int *n)
{
	struct ev *r = calloc(l->n + 1, sizeof(*r));

	*n = 0;
	if (!r)
		return NULL;
	for (int i = 0; i < l->n; i++)
		if (l->ev[i].who == who && (l->ev[i].kind == EV_START ||
					    l->ev[i].kind == EV_END))
			r[(*n)++] = l->ev[i];
	qsort(r, *n, sizeof(*r), ev_cmp);
	return r;
}

/*
 * B, without change_pte: no change_pte, and the same invalidation calls
 * as A, range for range. Compared as sets, since calls made on two CPUs
 * at once may reach the two notifiers in different orders.
 */
static bool b_mirrors_a(const struct log *l)
{
	int na, nb;
	struct ev *a = ranges_of(l, 'A', &na), *b = ranges_of(l, 'B', &nb);
	bool ok = a && b && na == nb;

	for (int i = 0; i < l->n; i++)
		if (l->ev[i].who == 'B' && l->ev[i].kind == EV_CHANGE) {
			ktap_diag("B got change_pte 0x%lx", l->ev[i].start);
			ok = false;
		}
	if (a && b && na != nb)
		ktap_diag("A got %d invalidation calls, B %d", na, nb);
	for (int i = 0; ok && i < na; i++)
		if (ev_cmp(&a[i], &b[i])) {
			ktap_diag("A and B differ: A %d 0x%lx-0x%lx, B %d 0x%lx-0x%lx",
				  a[i].kind, a[i].start, a[i].end,
				  b[i].kind, b[i].start, b[i].end);
			ok = false;
		}
	free(a);
	free(b);
	return ok;
}

static void dump(const struct log *l, unsigned long lo, unsigned long hi)
{
	for (int i = 0; i < l->n; i++) {
		const struct ev *e = &l->ev[i];

		if (e->kind == EV_CHANGE && e->start >= lo && e->start < hi)
			ktap_diag("%c change_pte 0x%lx pfn=0x%lx write=%d",
				  e->who, e->start, e->pfn, e->write);
		else if (e->kind != EV_CHANGE && e->end > lo && e->start < hi)
			ktap_diag("%c %s 0x%lx-0x%lx", e->who,
				  e->kind == EV_START ? "start" :
				  e->kind == EV_END ? "end" : "release",
				  e->start, e->end);
	}
}

int main(void)
{
	struct log merge = { 0 }, cow = { 0 };
	unsigned long kpfn, cpfn, base, addr;
	const struct ev *c;
	char *p;

	if (access(NT_PATH, F_OK)) {
		ktap_plan(1);
		ktap_skip("no %s: kernel without CONFIG_KSM_NOTIFIER_TEST",
			  NT_PATH);
		return ktap_finish();
	}
	ksm_save_settings();
	ktap_plan(3);

	/* Merge: PAGES copies of one page, watched from the start. */
	p = map_pages(PAGES);
	base = (uintptr_t)p;
	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < PAGES; i++)
		fill_pattern(p + i * page_size, 31, 0);
	nt_fd = open(NT_PATH, O_RDWR);
	CHECK(nt_fd >= 0, "open %s: %s", NT_PATH, strerror(errno));
	CHECK(nt_cmd("start"), "start: %s", strerror(errno));
	CHECK(merge_pages(p, PAGES) == 0, "madvise");
	CHECK(ksm_wait_counts(1, PAGES - 1, 0, 0), "one KSM page, %d sharers",
	      PAGES);
	/* ksmd stays out of the way from here on: no invalidation half done. */
	CHECK(ksm_pause() == 0, "pause ksmd");
	kpfn = page_pfn(p);
	CHECK(kpfn != 0, "pagemap gives no PFN (not root?)");
	CHECK(nt_read(&merge), "read the log");
	CHECK(merge.lost == 0, "%lu events lost", merge.lost);
	for (int i = 0; i < PAGES; i++) {
		addr = base + i * page_size;
		CHECK(page_pfn((void *)addr) == kpfn, "page %d pfn 0x%lx, not 0x%lx",
		      i, page_pfn((void *)addr), kpfn);
		c = last_change(&merge, addr);
		CHECK(c, "page %d: no change_pte", i);
		if (c)
			CHECK(c->pfn == kpfn && !c->write,
			      "page %d: last change_pte pfn=0x%lx write=%d, want pfn=0x%lx write=0",
			      i, c->pfn, c->write, kpfn);
	}
	CHECK(changes_inside_ranges(&merge), "change_pte inside invalidations");
	if (!checks_passed()) {
		dump(&merge, base, base + PAGES * page_size);
		ktap_result(false, "change_pte_on_merge");
	} else {
		ktap_result(true, "change_pte_on_merge");
	}

	/* COW: a write to one merged page gives it a writable private copy. */
	addr = base + COW_PAGE * page_size;
	CHECK(nt_cmd("clear"), "clear");
	fill_page(p, COW_PAGE, 77);
	cpfn = page_pfn((void *)addr);
	CHECK(nt_read(&cow), "read the log");
	CHECK(cow.lost == 0, "%lu events lost", cow.lost);
	CHECK(cpfn != 0 && cpfn != kpfn, "copy's pfn 0x%lx, KSM page 0x%lx",
	      cpfn, kpfn);
	c = last_change(&cow, addr);
	CHECK(c, "no change_pte for the written page");
	if (c)
		CHECK(c->pfn == cpfn && c->write,
		      "change_pte pfn=0x%lx write=%d, want pfn=0x%lx write=1",
		      c->pfn, c->write, cpfn);
	for (int i = 0; i < PAGES; i++)
		if (i != COW_PAGE)
			CHECK(!last_change(&cow, base + i * page_size),
			      "change_pte for unwritten page %d", i);
	CHECK(changes_inside_ranges(&cow), "change_pte inside invalidations");
	CHECK(page_holds(p, COW_PAGE, 77), "written page content");
	if (!checks_passed()) {
		dump(&cow, base, base + PAGES * page_size);
		ktap_result(false, "change_pte_on_cow");
	} else {
		ktap_result(true, "change_pte_on_cow");
	}

	/* B, without change_pte, saw the same invalidations and only them. */
	for (int i = 0; i < PAGES; i++)
		CHECK(invalidated(&merge, 'B', base + i * page_size),
		      "merge: B saw no invalidation of page %d", i);
	CHECK(invalidated(&cow, 'B', addr), "cow: B saw no invalidation");
	CHECK(b_mirrors_a(&merge), "merge: B's calls differ from A's");
	CHECK(b_mirrors_a(&cow), "cow: B's calls differ from A's");
	ktap_result(checks_passed(), "no_change_pte_without_the_method");

	ksm_resume();
	if (nt_fd >= 0) {
		nt_cmd("stop");
		close(nt_fd);
	}
	munmap(p, PAGES * page_size);
	free(merge.ev);
	free(cow.ev);
	return ktap_finish();
}
