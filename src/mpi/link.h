/*
 * link: the message layer of the MPI mode (issue 15 part 2). Every message
 * is one NUL-terminated JSON text on MPI_COMM_WORLD. Sends are
 * non-blocking (MPI_Isend, completed by later polls), so two ranks that
 * send large messages to each other at once never deadlock; receives are
 * polled (MPI_Iprobe). Rank 0 and every agent exchange heartbeats once a
 * second; a peer silent for longer than the timeout is "lost". Exactly one
 * thread of a process calls into the link (MPI_THREAD_SERIALIZED is
 * asked for and checked; Debian's Open MPI provides MULTIPLE).
 */
#ifndef EVO_MPI_LINK_H
#define EVO_MPI_LINK_H

#include "util.h"

/* Message tags. */
#define LINK_TAG_REQ   1   /* rank 0 -> agent: a request */
#define LINK_TAG_REPLY 2   /* agent -> rank 0: a reply (or hello) */

typedef struct MpiLink MpiLink;

/* 1 when the process was started by mpirun/mpiexec (Open MPI's
 * OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, or PMI_SIZE is set). */
int mpilink_launched(void);

/* MPI_Init_thread (MPI_THREAD_SERIALIZED) and the link. timeout_s: a peer
 * silent that long is lost (EVOENG_MPI_TIMEOUT overrides it). Returns 0,
 * or -1 with err (MPI_Init_thread failed, the thread level is too low). */
int mpilink_open(MpiLink **out, double timeout_s, EvoErr *err);
/* MPI_Finalize, unless a peer was lost (abandon: a finalize could wait
 * for it forever). Frees the link; NULL is fine. */
void mpilink_close(MpiLink **l, int abandon);

int mpilink_rank(const MpiLink *l);
int mpilink_size(const MpiLink *l);
/* The agent ranks on this process's host (at least 1): they share its
 * cores. */
int mpilink_local_agents(const MpiLink *l);

/* Queue msg (ownership taken, a malloc'd string) to dest. Never blocks. */
void mpilink_send(MpiLink *l, int dest, int tag, char *msg);
/* Progress the sends and heartbeats, and receive at most one message:
 * returns 1 with *src, *tag and *msg (the caller frees it), 0 when none
 * is waiting, -1 with err when MPI fails. */
int mpilink_poll(MpiLink *l, int *src, int *tag, char **msg, EvoErr *err);
/* 1 when peer has been silent (no message, no heartbeat) longer than
 * factor times the timeout (factor 1 normally; more for a peer still
 * starting, which sends nothing while it opens its GPUs). */
int mpilink_lost(const MpiLink *l, int peer, double factor);

#endif
