#include "record/event_block.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/events.h" /* EVENT_BLOCK_EVENTS */

int event_block_build(struct event_encoder *e, const struct event *ev, uint32_t n, int64_t pid,
                      int64_t tid, uint8_t *out, size_t cap, struct event_block_record *rec)
{
    size_t len;
    struct event_block_info info;
    int rc = event_block_encode(e, ev, n, out, cap, &len, &info);
    if (rc < 0)
        return rc;
    *rec = (struct event_block_record){
        .pid = pid,
        .tid = tid,
        .start_ns = info.start_ns,
        .end_ns = info.end_ns,
        .step_min = info.step_min,
        .step_max = info.step_max,
        .count = info.count,
        .data = out,
        .len = len,
    };
    return 0;
}

int event_block_writer_init(struct event_block_writer *w)
{
    w->cap = event_block_bound(EVENT_BLOCK_EVENTS);
    w->out = malloc(w->cap);
    int rc = event_encoder_init(&w->enc);
    if (!w->out || rc < 0) {
        event_block_writer_release(w);
        return -ENOMEM;
    }
    return 0;
}

void event_block_writer_release(struct event_block_writer *w)
{
    event_encoder_release(&w->enc);
    free(w->out);
    w->out = NULL;
}

int event_block_writer_store(struct event_block_writer *w, struct store *s, const char *run_id,
                             int64_t pid, int64_t tid, const struct event *ev, uint32_t n)
{
    for (uint32_t off = 0; off < n; off += EVENT_BLOCK_EVENTS) {
        uint32_t count = n - off < EVENT_BLOCK_EVENTS ? n - off : EVENT_BLOCK_EVENTS;
        struct event_block_record b;
        int rc = event_block_build(&w->enc, ev + off, count, pid, tid, w->out, w->cap, &b);
        if (rc < 0) {
            strbuf_reset(&s->err);
            strbuf_addf(&s->err, "cannot encode events: %s", strerror(-rc));
            return rc;
        }
        if ((rc = s->ops->event_block_insert(s, run_id, &b)) < 0)
            return rc;
    }
    return 0;
}
