// SPDX-License-Identifier: GPL-2.0
/*
 * KSM: memory hot-remove.
 *
 * A KSM node names its folio by pfn. When every mapping of the folio goes
 * before ksmd looks again, the node is stale, and ksmd finds that out by
 * looking the pfn up (sp_node_folio()), which needs its struct page. Memory
 * that goes offline may then be removed, and its memmap with it; so when a
 * range has gone offline, every node whose pfn lies in it is dropped here,
 * without touching the page. Such a node is always stale: offlining
 * migrates every page in use out of the range first, and migrating a KSM
 * folio moves its node's pfn with it (folio_migrate_ksm()).
 *
 * While a range goes offline ksmd waits between batches, so that it holds
 * no reference that would keep a page of the range from migrating. The
 * frames of the fresh-page pool (fresh.c) migrate out as movable pages.
 *
 * Layering (see samepage.h): calls into core.c, index.c, knode.c, thp.c.
 */
#include <linux/memory.h>
#include <linux/mutex.h>
#include <linux/wait.h>

#include "samepage.h"

/* Ranges going offline now; ksmd scans only while there is none. */
atomic_t sp_offlining = ATOMIC_INIT(0);

/* The range going offline, for sp_drop_node_in(); under sp_mutex. */
static unsigned long sp_off_start, sp_off_end;

static void sp_drop_node_in(struct sp_knode *node)
{
	if (node->kpfn >= sp_off_start && node->kpfn < sp_off_end)
		sp_knode_free(node);
}

/* Drop every node whose folio was in [@start, @end): all are stale. */
static void sp_drop_nodes_in(unsigned long start, unsigned long end)
{
	lockdep_assert_held(&sp_mutex);
	sp_off_start = start;
	sp_off_end = end;
	sp_stable_for_each(&sp_stable, sp_drop_node_in);
}

static int sp_memory_callback(struct notifier_block *nb, unsigned long action,
			      void *arg)
{
	struct memory_notify *mn = arg;

	switch (action) {
	case MEM_GOING_OFFLINE:
		/* Taking the mutex waits for ksmd's batch to end. */
		mutex_lock(&sp_mutex);
		atomic_inc(&sp_offlining);
		mutex_unlock(&sp_mutex);
		break;
	case MEM_OFFLINE:
		mutex_lock(&sp_mutex);
		sp_drop_nodes_in(mn->start_pfn, mn->start_pfn + mn->nr_pages);
		sp_thp_offline(mn->start_pfn, mn->start_pfn + mn->nr_pages);
		atomic_dec(&sp_offlining);
		mutex_unlock(&sp_mutex);
		wake_up_interruptible(&sp_thread_wait);
		break;
	case MEM_CANCEL_OFFLINE:
		atomic_dec(&sp_offlining);
		wake_up_interruptible(&sp_thread_wait);
		break;
	}
	return NOTIFY_OK;
}

static struct notifier_block sp_memory_nb = {
	.notifier_call = sp_memory_callback,
	.priority = KSM_CALLBACK_PRI,
};

/**
 * sp_hotplug_init - register for memory going offline
 *
 * Return: 0 or the error of register_memory_notifier().
 */
int __init sp_hotplug_init(void)
{
	return register_memory_notifier(&sp_memory_nb);
}

/**
 * sp_hotplug_exit - undo sp_hotplug_init(), when boot fails further on
 */
void __init sp_hotplug_exit(void)
{
	unregister_memory_notifier(&sp_memory_nb);
}
