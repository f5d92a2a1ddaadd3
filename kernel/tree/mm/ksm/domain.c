// SPDX-License-Identifier: GPL-2.0
/*
 * KSM merge domains: which pages may share a frame.
 *
 * Merging is observable. A write to a merged page takes a copy-on-write
 * fault and is slower than a write to a private page, so a process that
 * fills a page with a guess, lets ksmd run and times a write learns
 * whether some other process holds that content. Under a merge domain
 * setting other than "system", two pages merge only when their mms are in
 * the same domain: then the guess can only match the guesser's own
 * domain, and what the timing tells is what the domain already knows.
 *
 * A domain is a 64-bit value worked out for each mm once a pass, when ksmd
 * starts on it (sp_domain_enter()), and kept in its slot:
 *   system   0 for every mm: any page may merge with any other; the
 *            default
 *   process  a number drawn for the mm when it registered, never reused,
 *            so that an exited process's KSM pages are no one else's
 *   cgroup   the id of the mm owner's memory cgroup (cgroup ids are not
 *            reused within a boot)
 *   user     the effective uid of the mm's owner (with CONFIG_MEMCG, where
 *            an mm knows its owner), else of the task that registered it
 *
 * The domain is folded into the u64 index key: the content hash XOR a
 * 32-bit keyed hash of the domain, its "salt" (under a key drawn at boot;
 * zero for "system", whose keys are the content hashes themselves). Equal
 * pages of different domains therefore nearly always get different keys,
 * and land in different stable buckets and candidate probe sequences, so
 * that a lookup walks its own domain's pages only: a thousand VMs holding
 * one image in a thousand domains do not make one bucket a thousand long,
 * and do not exhaust each other's probe limit. But salts are 32 bits, so
 * two domains' salts may be equal, and in any case equal keys of
 * different domains can meet: every KSM page and candidate is also
 * checked for its exact domain before it is compared, which is what the
 * isolation rests on. The salt only keeps lookups cheap.
 *
 * The zero page is shared across domains (use_zero_pages): the content
 * all-zero is no secret, and mapping it is what every fresh anonymous
 * page does.
 *
 * The setting changes only while there is no KSM page (EBUSY otherwise,
 * as for merge_across_nodes): a KSM page of two domains can then never
 * exist. Changing it drops this pass's candidates, so that the pass goes
 * on in the new domains (sp_domain_set()). Locking: sp_dom_kind is
 * written under sp_mutex; slot->dom and slot->salt are ksmd's, under
 * sp_mutex.
 *
 * Layering (see samepage.h): calls into core.c, index.c.
 */
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/memcontrol.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/siphash.h>

#include "../internal.h"
#include "samepage.h"

unsigned int sp_dom_kind = SP_DOM_SYSTEM;

static siphash_key_t sp_dom_key __ro_after_init;
static atomic64_t sp_dom_seq = ATOMIC64_INIT(0);

const char * const sp_dom_names[SP_DOM_NR] = {
	[SP_DOM_SYSTEM]		= "system",
	[SP_DOM_PROCESS]	= "process",
	[SP_DOM_CGROUP]		= "cgroup",
	[SP_DOM_USER]		= "user",
};

/**
 * sp_domain_register - note what a newly registered mm's domain rests on
 * @slot: the new slot, not yet visible to ksmd
 *
 * Called by the task that registers the mm: it madvises, prctls, forks or
 * execs, and its effective uid is the mm's for the "user" domain where
 * the mm's owner cannot be asked later.
 */
void sp_domain_register(struct sp_slot *slot)
{
	slot->seq = atomic64_inc_return(&sp_dom_seq);
	slot->uid = current_euid();
}

/* The effective uid the "user" domain of @mm goes by. */
static kuid_t sp_owner_uid(struct sp_slot *slot)
{
	kuid_t uid = slot->uid;
#ifdef CONFIG_MEMCG
	struct task_struct *owner;

	rcu_read_lock();
	owner = rcu_dereference(slot->mm->owner);
	if (owner)
		uid = task_euid(owner);
	rcu_read_unlock();
#endif
	return uid;
}

/* The id of the memory cgroup of @mm's owner; 0 without one. */
static u64 sp_owner_cgroup(struct mm_struct *mm)
{
	u64 id = 0;
#ifdef CONFIG_MEMCG
	struct mem_cgroup *memcg = get_mem_cgroup_from_mm(mm);

	if (memcg) {
		id = cgroup_id(memcg->css.cgroup);
		css_put(&memcg->css);
	}
#endif
	return id;
}

/* Work @slot's domain out under setting @kind. */
static void sp_domain_compute(struct sp_slot *slot, unsigned int kind)
{
	switch (kind) {
	case SP_DOM_PROCESS:
		slot->dom = slot->seq;
		break;
	case SP_DOM_CGROUP:
		slot->dom = sp_owner_cgroup(slot->mm);
		break;
	case SP_DOM_USER:
		slot->dom = from_kuid(&init_user_ns, sp_owner_uid(slot));
		break;
	default:
		slot->dom = 0;
		break;
	}
	/* The kind goes into the salt: uid 5 and cgroup 5 key apart. */
	slot->salt = kind == SP_DOM_SYSTEM ? 0 :
		     (u32)siphash_2u64(kind, slot->dom, &sp_dom_key);
}

/**
 * sp_domain_enter - ksmd starts a pass's walk of @slot's mm
 * @slot: the slot; sp_mutex held
 *
 * A process that moved to another cgroup or changed its uid merges in its
 * new domain from here on; what it merged before stays shared until it is
 * written or unmerged, as its memory stays charged where it was.
 */
void sp_domain_enter(struct sp_slot *slot)
{
	lockdep_assert_held(&sp_mutex);
	sp_domain_compute(slot, READ_ONCE(sp_dom_kind));
}

/**
 * sp_domain_supported - can merge domains be of @kind on this kernel?
 * @kind: an SP_DOM_* value
 *
 * Return: false for "cgroup" without the memory controller.
 */
bool sp_domain_supported(unsigned int kind)
{
	if (kind >= SP_DOM_NR)
		return false;
	if (kind == SP_DOM_CGROUP)
		return IS_ENABLED(CONFIG_MEMCG) && !mem_cgroup_disabled();
	return true;
}

/**
 * sp_domain_set - change what a merge domain is
 * @kind: the new setting, supported
 *
 * Called with sp_mutex held and no KSM page left. The candidates of the
 * pass in progress were keyed in the old domains: they are dropped. A
 * slot's domain is read only by lookups of its own pages and of its
 * candidates, so it needs working out again only before its pages are
 * looked up: at the start of its walk (sp_domain_enter()), and here for
 * the slot that ksmd's pass is in the middle of. Nothing is done per slot:
 * a host with many processes pays for none of them.
 */
void sp_domain_set(unsigned int kind)
{
	lockdep_assert_held(&sp_mutex);
	WRITE_ONCE(sp_dom_kind, kind);
	if (sp_cur.slot)
		sp_domain_compute(sp_cur.slot, kind);
	sp_cand_clear(&sp_cands);
}

/**
 * sp_domain_init - draw the key that salts domains, at boot
 */
void __init sp_domain_init(void)
{
	get_random_bytes(&sp_dom_key, sizeof(sp_dom_key));
}

#ifdef CONFIG_KSM_DOMAIN_KUNIT_TEST
#include "tests/domain-kunit.h"
#endif
