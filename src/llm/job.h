/*
 * job: the LLM client's private state, shared by src/llm/llm.c (the
 * client, HTTP attempts, the driver) and src/llm/cmd.c (the --llm-cmd
 * runner), and the end of a job (job.c), which both call. Not for use
 * outside the client.
 */
#ifndef EVO_LLM_JOB_H
#define EVO_LLM_JOB_H

#include <curl/curl.h>
#include <sys/types.h>

#include "llm/llm_provider.h"
#include "llm/record.h"

typedef enum JobState { JOB_QUEUED = 0, JOB_RUNNING, JOB_WAITING, JOB_DONE } JobState;

typedef struct Job {
    struct Job *next;
    JobState    state;
    LlmResult  *res;
    char      **entries;
    int         nentries;
    double      start_ms;       /* when it got a slot */
    int         id;             /* for log lines */
    /* HTTP */
    char       *body;           /* request JSON */
    CURL       *easy;
    StrBuf      resp;
    int         too_large;
    size_t      cap;            /* reply size cap for on_body */
    double      retry_after_s;  /* -1: none in the last reply */
    double      wake_ms;        /* JOB_WAITING: when to retry */
    char        errbuf[CURL_ERROR_SIZE];
    /* command */
    pid_t       pid;            /* 0: none */
    int         in_fd, out_fd, err_fd;
    char       *input;
    size_t      input_len, input_off;
    StrBuf      errtext;
    double      deadline_ms;
} Job;

typedef struct Llm Llm;   /* also in llm.h */

struct Llm {
    LlmConfig           cfg;        /* strings below are owned copies */
    const LlmProvider  *prov;       /* NULL with cmd */
    char               *url;        /* endpoint (redacted form is the same: keys never go in URLs we build) */
    char               *key;        /* API key or NULL; only for headers and redaction */
    struct curl_slist  *headers;
    CURLM              *multi;
    Job                *jobs;       /* not yet finished, in submission order */
    LlmResult         **ready;      /* finished, FIFO */
    int                 nready, capready;
    int                 slots_used; /* RUNNING + WAITING */
    int                 used;       /* logical requests started */
    int                 next_id;
    uint64_t            rng;
};

/* s with every occurrence of the API key replaced by [REDACTED] (fresh). */
char *llm_redact(const Llm *l, const char *s);
/* Kill a job's command (its process group) and close its pipes. */
void llm_job_kill_cmd(Job *j);
/* Finish job j with status st and the formatted error (NULL: none): its
 * result goes to the ready queue and its slot is freed. */
void llm_finish(Llm *l, Job *j, LlmStatus st, const char *fmt, ...) EVO_PRINTF(4, 5);
/* Finish job j with the model's text: the code is extracted from it. */
void llm_finish_text(Llm *l, Job *j, const char *text);
#endif
