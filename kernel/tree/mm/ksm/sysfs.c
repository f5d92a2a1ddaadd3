// SPDX-License-Identifier: GPL-2.0
/*
 * KSM sysfs: /sys/kernel/mm/ksm, the files that
 * Documentation/admin-guide/mm/ksm.rst documents, those of the
 * established ABI with the meanings and errors they have always had; and
 * the per-process profit shown in /proc/PID/ksm_stat.
 *
 * Layering (see samepage.h): calls into advisor.c, core.c, domain.c,
 * estimate.c, fresh.c, index.c, knode.c, ksmd.c, pressure.c.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/kernfs.h>
#include <linux/kobject.h>
#include <linux/memcontrol.h>
#include <linux/ksm.h>
#include <linux/mm.h>
#include <linux/oom.h>
#include <linux/string.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/xarray.h>

#include "samepage.h"

/*
 * What ksmd's records cost, in bytes, for the profit figures. A tracked
 * page costs its slot in its mm's xarray: a node of XA_CHUNK_SIZE slots
 * per XA_CHUNK_SIZE pages where the pages are dense, as mergeable areas
 * are. A merged mapping adds its struct sp_sharer in its node's array,
 * and a KSM page its struct sp_knode, at the size its slab cache really
 * hands out. The two tables (sp_index_bytes()) count in general_profit
 * alone.
 */
static unsigned long sp_slot_bytes(void)
{
	return DIV_ROUND_UP(sizeof(struct xa_node), XA_CHUNK_SIZE);
}

static long sp_cost(unsigned long tracked, unsigned long mappings,
		    unsigned long kpages)
{
	return tracked * sp_slot_bytes() +
	       mappings * sizeof(struct sp_sharer) +
	       kpages * kmem_cache_size(sp_node_cache);
}

/**
 * ksm_process_profit - what merging saves @mm, less what it costs
 * @mm: the mm
 *
 * The KSM pages themselves are shared among processes and are counted in
 * general_profit only.
 *
 * Return: bytes saved by the mm's merged and zero pages, minus metadata.
 */
long ksm_process_profit(struct mm_struct *mm)
{
	return (long)(mm->ksm_merging_pages + mm_ksm_zero_pages(mm)) *
	       PAGE_SIZE - sp_cost(mm->ksm_rmap_items, mm->ksm_merging_pages, 0);
}

#define SP_ATTR_RO(_name) \
	static struct kobj_attribute _name##_attr = __ATTR_RO(_name)
#define SP_ATTR_RW(_name) \
	static struct kobj_attribute _name##_attr = __ATTR_RW(_name)

/* A read-only counter. */
#define SP_COUNTER(_name, _expr)					\
static ssize_t _name##_show(struct kobject *k, struct kobj_attribute *a, \
			    char *buf)					\
{									\
	return sysfs_emit(buf, "%lu\n", (unsigned long)(_expr));	\
}									\
SP_ATTR_RO(_name)

/*
 * Under hide_merges, the counters of what ksmd found are root's alone
 * (mode 0400, and a file opened before is refused at read): a process
 * could tell that its own page merged by pages_sharing's move. How far
 * ksmd got (full_scans, pages_scanned) stays world-readable.
 */
static bool sp_found_hidden(void)
{
	return READ_ONCE(ksm_hide_merges) && !capable(CAP_SYS_ADMIN);
}

/* A read-only counter of what ksmd found. */
#define SP_FOUND(_name, _expr)						\
static ssize_t _name##_show(struct kobject *k, struct kobj_attribute *a, \
			    char *buf)					\
{									\
	if (sp_found_hidden())						\
		return -EACCES;						\
	return sysfs_emit(buf, "%lu\n", (unsigned long)(_expr));	\
}									\
SP_ATTR_RO(_name)

SP_COUNTER(pages_scanned, READ_ONCE(sp_stats.scanned));
SP_FOUND(pages_shared, READ_ONCE(sp_stats.shared));
SP_FOUND(pages_sharing, READ_ONCE(sp_stats.sharing));
SP_FOUND(pages_unshared, READ_ONCE(sp_stats.unshared));
SP_FOUND(pages_skipped, READ_ONCE(sp_stats.skipped));
SP_COUNTER(full_scans, READ_ONCE(sp_stats.full_scans));
SP_FOUND(huge_pages_split, READ_ONCE(sp_stats.thp_split));
SP_FOUND(huge_pages_kept, READ_ONCE(sp_stats.thp_kept));

/*
 * KSM pages of one content beyond max_page_sharing (or on other NUMA
 * nodes): "chains" of "dups", as ksm.rst defines these two counters. The
 * stable table counts them as they form and break.
 */
SP_FOUND(stable_node_chains, READ_ONCE(sp_stable.chains));
SP_FOUND(stable_node_dups, READ_ONCE(sp_stable.dups));
SP_FOUND(kernel_pages_allocated, READ_ONCE(sp_stats.shared));

static long sp_volatile(void)
{
	long v = READ_ONCE(sp_stats.tracked) - READ_ONCE(sp_stats.shared) -
		 READ_ONCE(sp_stats.sharing) - READ_ONCE(sp_stats.unshared);

	/* Read without the lock: hide a transient negative. */
	return max(v, 0L);
}

static ssize_t pages_volatile_show(struct kobject *k, struct kobj_attribute *a,
				   char *buf)
{
	if (sp_found_hidden())
		return -EACCES;
	return sysfs_emit(buf, "%ld\n", sp_volatile());
}
SP_ATTR_RO(pages_volatile);

static ssize_t ksm_zero_pages_show(struct kobject *k, struct kobj_attribute *a,
				   char *buf)
{
	if (sp_found_hidden())
		return -EACCES;
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&ksm_zero_pages));
}
SP_ATTR_RO(ksm_zero_pages);

static ssize_t general_profit_show(struct kobject *k, struct kobj_attribute *a,
				   char *buf)
{
	unsigned long shared = READ_ONCE(sp_stats.shared);
	unsigned long sharing = READ_ONCE(sp_stats.sharing);
	long saved = sharing + atomic_long_read(&ksm_zero_pages);

	if (sp_found_hidden())
		return -EACCES;
	return sysfs_emit(buf, "%ld\n", saved * (long)PAGE_SIZE -
			  sp_cost(READ_ONCE(sp_stats.tracked), shared + sharing,
				  shared) - sp_index_bytes());
}
SP_ATTR_RO(general_profit);

/*
 * An unsigned int tunable: any parse error is EINVAL (never kstrtouint()'s
 * ERANGE), the error these files have always given.
 */
static ssize_t sp_store_uint_max(const char *buf, size_t count,
				 unsigned int *val, unsigned int max)
{
	unsigned int v;

	if (kstrtouint(buf, 10, &v) || v > max)
		return -EINVAL;
	WRITE_ONCE(*val, v);
	return count;
}

static ssize_t sp_store_uint(const char *buf, size_t count, unsigned int *val)
{
	return sp_store_uint_max(buf, count, val, UINT_MAX);
}

static ssize_t sp_store_ulong(const char *buf, size_t count,
			      unsigned long *val, unsigned long min)
{
	unsigned long v;

	if (kstrtoul(buf, 10, &v) || v < min)
		return -EINVAL;
	WRITE_ONCE(*val, v);
	return count;
}

static ssize_t sp_store_bool(const char *buf, size_t count, bool *val)
{
	bool v;

	if (kstrtobool(buf, &v))
		return -EINVAL;
	WRITE_ONCE(*val, v);
	return count;
}

/*
 * Boolean setting sp_<_name>, which ksmd reads with READ_ONCE(); ksmd is
 * woken, so that a new value takes effect at once, not after a long sleep
 * (pressure_only's stand-down).
 */
#define SP_BOOL_ATTR(_name)						\
static ssize_t _name##_show(struct kobject *k, struct kobj_attribute *a, \
			    char *buf)					\
{									\
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_##_name));	\
}									\
static ssize_t _name##_store(struct kobject *k, struct kobj_attribute *a, \
			     const char *buf, size_t count)		\
{									\
	ssize_t ret = sp_store_bool(buf, count, &sp_##_name);	\
									\
	wake_up_interruptible(&sp_thread_wait);				\
	return ret;							\
}									\
SP_ATTR_RW(_name)

static ssize_t sleep_millisecs_show(struct kobject *k,
				    struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_sleep_ms));
}

static ssize_t sleep_millisecs_store(struct kobject *k,
				     struct kobj_attribute *a,
				     const char *buf, size_t count)
{
	ssize_t ret = sp_store_uint(buf, count, &sp_sleep_ms);

	wake_up_interruptible(&sp_thread_wait);
	return ret;
}
SP_ATTR_RW(sleep_millisecs);

static ssize_t pages_to_scan_show(struct kobject *k, struct kobj_attribute *a,
				  char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_pages_to_scan));
}

static ssize_t pages_to_scan_store(struct kobject *k, struct kobj_attribute *a,
				   const char *buf, size_t count)
{
	/* The advisor owns pages_to_scan while it is on. */
	if (READ_ONCE(sp_advisor_on))
		return -EINVAL;
	return sp_store_uint(buf, count, &sp_pages_to_scan);
}
SP_ATTR_RW(pages_to_scan);

static ssize_t run_show(struct kobject *k, struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%lu\n", READ_ONCE(sp_run));
}

/*
 * Serializes the writers of run, taken before sp_mutex: run=2 lets go of
 * sp_mutex between slots (sp_unmerge_all()), and another write of run
 * must still wait for it to end, as when run=2 held sp_mutex throughout.
 */
static DEFINE_MUTEX(sp_run_lock);

static ssize_t run_store(struct kobject *k, struct kobj_attribute *a,
			 const char *buf, size_t count)
{
	unsigned int v;
	ssize_t ret = count;
	int err;

	if (kstrtouint(buf, 10, &v) || v > SP_RUN_UNMERGE)
		return -EINVAL;
	mutex_lock(&sp_run_lock);
	mutex_lock(&sp_mutex);
	if (READ_ONCE(sp_run) != v) {
		WRITE_ONCE(sp_run, v);
		if (v & SP_RUN_UNMERGE) {
			set_current_oom_origin();
			err = sp_unmerge_all();
			clear_current_oom_origin();
			if (err) {
				WRITE_ONCE(sp_run, SP_RUN_STOP);
				ret = err;
			}
		}
	}
	mutex_unlock(&sp_mutex);
	mutex_unlock(&sp_run_lock);
	if (v & SP_RUN_MERGE)
		wake_up_interruptible(&sp_thread_wait);
	return ret;
}
SP_ATTR_RW(run);

/*
 * Settings that the KSM pages depend on change only while there are none:
 * else EBUSY, as merge_across_nodes and max_page_sharing have always
 * answered. Once no KSM page has a sharer, the orphans left (which have
 * none) are let go first; while one has, the answer costs no walk of the
 * table. Called with sp_mutex held.
 */
static bool sp_index_busy(void)
{
	lockdep_assert_held(&sp_mutex);
	if (READ_ONCE(sp_stats.shared))
		return true;
	sp_stable_for_each(&sp_stable, sp_release_orphan);
	return sp_stable.nr;
}

#ifdef CONFIG_NUMA
static ssize_t merge_across_nodes_show(struct kobject *k,
				       struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_merge_across_nodes));
}

static ssize_t merge_across_nodes_store(struct kobject *k,
					struct kobj_attribute *a,
					const char *buf, size_t count)
{
	unsigned long v;
	int err;

	err = kstrtoul(buf, 10, &v);
	if (err)
		return err;
	if (v > 1)
		return -EINVAL;
	mutex_lock(&sp_mutex);
	if (READ_ONCE(sp_merge_across_nodes) != v) {
		if (sp_index_busy())
			err = -EBUSY;
		else
			WRITE_ONCE(sp_merge_across_nodes, v);
	}
	mutex_unlock(&sp_mutex);
	return err ? err : count;
}
SP_ATTR_RW(merge_across_nodes);
#endif

static ssize_t max_page_sharing_show(struct kobject *k,
				     struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_max_page_sharing));
}

static ssize_t max_page_sharing_store(struct kobject *k,
				      struct kobj_attribute *a,
				      const char *buf, size_t count)
{
	int v, err;

	err = kstrtoint(buf, 10, &v);
	if (err)
		return err;
	/* A new KSM page has two sharers: fewer makes no sense. */
	if (v < 2)
		return -EINVAL;
	if (READ_ONCE(sp_max_page_sharing) == v)
		return count;
	mutex_lock(&sp_mutex);
	if (sp_index_busy())
		err = -EBUSY;
	else
		WRITE_ONCE(sp_max_page_sharing, v);
	mutex_unlock(&sp_mutex);
	return err ? err : count;
}
SP_ATTR_RW(max_page_sharing);

SP_BOOL_ATTR(use_zero_pages);

SP_BOOL_ATTR(zero_pages_only);

SP_BOOL_ATTR(estimate);

SP_BOOL_ATTR(pressure_only);

/* The level ksmd last scanned at under pressure_only; 0 without it. */
SP_COUNTER(pressure_level, READ_ONCE(sp_pressure_only) ?
			   READ_ONCE(sp_pressure_level) : 0);

/*
 * What pages_shared, pages_sharing and ksm_zero_pages would be once all
 * that estimate's last complete pass found merges (estimate.c): what is
 * merged now and what the pass counted besides; 0 while estimate is off.
 */
#define SP_ESTIMATED(_name, _now, _field)				\
	SP_FOUND(_name, READ_ONCE(sp_estimate) ?			\
			(_now) + READ_ONCE(sp_est_shown._field) : 0)

SP_ESTIMATED(estimated_pages_shared, READ_ONCE(sp_stats.shared), shared);
SP_ESTIMATED(estimated_pages_sharing, READ_ONCE(sp_stats.sharing), sharing);
SP_ESTIMATED(estimated_zero_pages, atomic_long_read(&ksm_zero_pages), zero);

static ssize_t use_fresh_pages_show(struct kobject *k,
				    struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_use_fresh_pages));
}

/* Off frees the pool of frames (fresh.c); KSM pages made stay as they are. */
static ssize_t use_fresh_pages_store(struct kobject *k,
				     struct kobj_attribute *a,
				     const char *buf, size_t count)
{
	bool v;

	if (kstrtobool(buf, &v))
		return -EINVAL;
	mutex_lock(&sp_mutex);
	WRITE_ONCE(sp_use_fresh_pages, v);
	if (!v && !READ_ONCE(ksm_hide_merges))
		sp_fresh_drain();
	mutex_unlock(&sp_mutex);
	return count;
}
SP_ATTR_RW(use_fresh_pages);

#define SP_A(_name)	(&_name##_attr.attr)

/* What ksmd found: root's alone under hide_merges (sp_found_hidden()). */
static struct attribute *sp_found_attrs[] = {
	SP_A(pages_skipped), SP_A(pages_shared), SP_A(pages_sharing),
	SP_A(pages_unshared), SP_A(pages_volatile), SP_A(ksm_zero_pages),
	SP_A(general_profit), SP_A(stable_node_chains), SP_A(stable_node_dups),
	SP_A(kernel_pages_allocated), SP_A(huge_pages_split),
	SP_A(huge_pages_kept), SP_A(estimated_pages_shared),
	SP_A(estimated_pages_sharing), SP_A(estimated_zero_pages),
	NULL,
};

/* Give the files of sp_found_attrs their modes for @hide. */
static void sp_found_modes(bool hide)
{
	struct iattr ia = { .ia_valid = ATTR_MODE };
	struct kernfs_node *dir, *kn;
	struct attribute **a;

	dir = kernfs_find_and_get(mm_kobj->sd, "ksm");
	if (!dir)
		return;
	for (a = sp_found_attrs; *a; a++) {
		kn = kernfs_find_and_get(dir, (*a)->name);
		if (!kn)
			continue;
		ia.ia_mode = S_IFREG | ((*a)->mode & (hide ? 0400 : 0777));
		kernfs_setattr(kn, &ia);
		kernfs_put(kn);
	}
	kernfs_put(dir);
}

static ssize_t hide_merges_show(struct kobject *k, struct kobj_attribute *a,
				char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(ksm_hide_merges));
}

/*
 * Like merge_across_nodes, hide_merges changes only while no KSM page
 * exists (EBUSY otherwise): KSM pages made under one value would show
 * their mappers under the other what merged. It is refused (EINVAL)
 * where memory cgroups do not account kernel memory.
 */
static ssize_t hide_merges_store(struct kobject *k, struct kobj_attribute *a,
				 const char *buf, size_t count)
{
	int err = 0;
	bool v;

	if (kstrtobool(buf, &v))
		return -EINVAL;
	/*
	 * Each mapping is charged to its memory cgroup as kernel memory
	 * (fresh.c): without that accounting a merge would show in
	 * memory.current.
	 */
	if (v && !mem_cgroup_disabled() && mem_cgroup_kmem_disabled())
		return -EINVAL;
	mutex_lock(&sp_mutex);
	if (READ_ONCE(ksm_hide_merges) != v) {
		if (sp_index_busy()) {
			err = -EBUSY;
		} else {
			WRITE_ONCE(ksm_hide_merges, v);
			sp_found_modes(v);
			if (!v && !READ_ONCE(sp_use_fresh_pages))
				sp_fresh_drain();
		}
	}
	mutex_unlock(&sp_mutex);
	wake_up_interruptible(&sp_thread_wait);
	return err ? err : count;
}
SP_ATTR_RW(hide_merges);

SP_BOOL_ATTR(smart_scan);

/* Still scans before ksmd protects a page (walk.c); 0: never, nor watch. */
static ssize_t protect_after_scans_show(struct kobject *k,
					struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_protect_after));
}

static ssize_t protect_after_scans_store(struct kobject *k,
					 struct kobj_attribute *a,
					 const char *buf, size_t count)
{
	return sp_store_uint_max(buf, count, &sp_protect_after,
				 SP_PROTECT_AFTER_MAX);
}
SP_ATTR_RW(protect_after_scans);

/* Matches in a pass that make a large folio worth splitting (thp.c). */
static ssize_t thp_split_min_show(struct kobject *k, struct kobj_attribute *a,
				  char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_thp_split_min));
}

static ssize_t thp_split_min_store(struct kobject *k, struct kobj_attribute *a,
				   const char *buf, size_t count)
{
	unsigned int v;

	if (kstrtouint(buf, 10, &v) || !v || v > SP_THP_SPLIT_MAX)
		return -EINVAL;
	WRITE_ONCE(sp_thp_split_min, v);
	return count;
}
SP_ATTR_RW(thp_split_min);

static ssize_t stable_node_chains_prune_millisecs_show(struct kobject *k,
						       struct kobj_attribute *a,
						       char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_chains_prune_ms));
}

static ssize_t stable_node_chains_prune_millisecs_store(struct kobject *k,
							struct kobj_attribute *a,
							const char *buf,
							size_t count)
{
	return sp_store_uint(buf, count, &sp_chains_prune_ms);
}
SP_ATTR_RW(stable_node_chains_prune_millisecs);

static ssize_t max_kernel_pages_show(struct kobject *k,
				     struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%lu\n", READ_ONCE(sp_max_kernel_pages));
}

static ssize_t max_kernel_pages_store(struct kobject *k,
				      struct kobj_attribute *a,
				      const char *buf, size_t count)
{
	return sp_store_ulong(buf, count, &sp_max_kernel_pages, 0);
}
SP_ATTR_RW(max_kernel_pages);

static ssize_t advisor_mode_show(struct kobject *k, struct kobj_attribute *a,
				 char *buf)
{
	return sysfs_emit(buf, "%s\n", READ_ONCE(sp_advisor_on) ?
			  "none [scan-time]" : "[none] scan-time");
}

static ssize_t advisor_mode_store(struct kobject *k, struct kobj_attribute *a,
				  const char *buf, size_t count)
{
	bool on;

	if (sysfs_streq(buf, "scan-time"))
		on = true;
	else if (sysfs_streq(buf, "none"))
		on = false;
	else
		return -EINVAL;
	mutex_lock(&sp_mutex);
	if (READ_ONCE(sp_advisor_on) != on) {
		WRITE_ONCE(sp_advisor_on, on);
		sp_advisor_defaults();
	}
	mutex_unlock(&sp_mutex);
	return count;
}
SP_ATTR_RW(advisor_mode);

/*
 * merge_domain: what may merge with what (domain.c). Lists the settings
 * this kernel supports, the current one in brackets.
 */
static ssize_t merge_domain_show(struct kobject *k, struct kobj_attribute *a,
				 char *buf)
{
	unsigned int kind, cur = READ_ONCE(sp_dom_kind);
	int len = 0;

	for (kind = 0; kind < SP_DOM_NR; kind++) {
		if (!sp_domain_supported(kind))
			continue;
		len += sysfs_emit_at(buf, len, kind == cur ? "%s[%s]" : "%s%s",
				     len ? " " : "", sp_dom_names[kind]);
	}
	return len + sysfs_emit_at(buf, len, "\n");
}

static ssize_t merge_domain_store(struct kobject *k, struct kobj_attribute *a,
				  const char *buf, size_t count)
{
	int kind = sysfs_match_string(sp_dom_names, buf);
	int err = 0;

	if (kind < 0 || !sp_domain_supported(kind))
		return -EINVAL;
	mutex_lock(&sp_mutex);
	if (READ_ONCE(sp_dom_kind) != kind) {
		if (sp_index_busy())
			err = -EBUSY;
		else
			sp_domain_set(kind);
	}
	mutex_unlock(&sp_mutex);
	return err ? err : count;
}
SP_ATTR_RW(merge_domain);

/* The advisor's unsigned long tunables sp_<name>, and their lowest value. */
#define SP_ADVISOR_ATTR(_name, _min)					\
static ssize_t _name##_show(struct kobject *k, struct kobj_attribute *a, \
			    char *buf)					\
{									\
	return sysfs_emit(buf, "%lu\n", READ_ONCE(sp_##_name));	\
}									\
static ssize_t _name##_store(struct kobject *k, struct kobj_attribute *a, \
			     const char *buf, size_t count)		\
{									\
	return sp_store_ulong(buf, count, &sp_##_name, _min);		\
}									\
SP_ATTR_RW(_name)

/*
 * advisor_max_cpu is held in 32 bits: a larger value is cut to its low 32
 * bits rather than refused, as ksm.rst documents.
 */
static ssize_t advisor_max_cpu_show(struct kobject *k,
				    struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(sp_advisor_max_cpu));
}

static ssize_t advisor_max_cpu_store(struct kobject *k,
				     struct kobj_attribute *a,
				     const char *buf, size_t count)
{
	unsigned long v;

	if (kstrtoul(buf, 10, &v))
		return -EINVAL;
	WRITE_ONCE(sp_advisor_max_cpu, (unsigned int)v);
	return count;
}
SP_ATTR_RW(advisor_max_cpu);

SP_ADVISOR_ATTR(advisor_min_pages_to_scan, 0);
SP_ADVISOR_ATTR(advisor_max_pages_to_scan, 0);
SP_ADVISOR_ATTR(advisor_target_scan_time, 1);

static struct attribute *sp_attrs[] = {
	/* What ksmd does, and how fast. */
	SP_A(run), SP_A(pages_to_scan), SP_A(sleep_millisecs),
	SP_A(smart_scan), SP_A(use_zero_pages), SP_A(zero_pages_only),
	SP_A(max_page_sharing),
#ifdef CONFIG_NUMA
	SP_A(merge_across_nodes),
#endif
	SP_A(stable_node_chains_prune_millisecs), SP_A(max_kernel_pages),
	SP_A(merge_domain), SP_A(use_fresh_pages), SP_A(hide_merges),
	SP_A(protect_after_scans),
	SP_A(thp_split_min), SP_A(estimate), SP_A(pressure_only),
	SP_A(advisor_mode), SP_A(advisor_max_cpu),
	SP_A(advisor_min_pages_to_scan), SP_A(advisor_max_pages_to_scan),
	SP_A(advisor_target_scan_time),
	/* What it found. */
	SP_A(full_scans), SP_A(pages_scanned), SP_A(pages_skipped),
	SP_A(pages_shared), SP_A(pages_sharing), SP_A(pages_unshared),
	SP_A(pages_volatile), SP_A(ksm_zero_pages), SP_A(general_profit),
	SP_A(stable_node_chains), SP_A(stable_node_dups),
	SP_A(kernel_pages_allocated), SP_A(huge_pages_split),
	SP_A(huge_pages_kept), SP_A(estimated_pages_shared),
	SP_A(estimated_pages_sharing), SP_A(estimated_zero_pages),
	SP_A(pressure_level),
	NULL,
};

static const struct attribute_group sp_attr_group = {
	.attrs = sp_attrs,
	.name = "ksm",
};

/**
 * sp_sysfs_init - create /sys/kernel/mm/ksm
 *
 * Return: 0 or the error from sysfs.
 */
int __init sp_sysfs_init(void)
{
	return sysfs_create_group(mm_kobj, &sp_attr_group);
}

/**
 * sp_sysfs_exit - undo sp_sysfs_init(), when boot fails further on
 */
void __init sp_sysfs_exit(void)
{
	sysfs_remove_group(mm_kobj, &sp_attr_group);
}
