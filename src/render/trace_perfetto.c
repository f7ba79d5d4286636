/*
 * Perfetto's native trace format: a Trace message whose only field is
 * repeated TracePacket, each a TrackDescriptor (the tracks) or a TrackEvent
 * (slice begin/end, instant, counter value). Event names and categories are
 * interned: defined once on the sequence in InternedData, then referred to
 * by id, which is what makes the file small enough for traces JSON cannot
 * hold. The protobuf encoding is written here by hand (varints and
 * length-delimited fields), no library needed.
 *
 * Field numbers are Perfetto's (protos/perfetto/trace/trace_packet.proto,
 * track_event/track_event.proto, track_descriptor.proto,
 * process_descriptor.proto, thread_descriptor.proto,
 * counter_descriptor.proto, debug_annotation.proto,
 * interned_data/interned_data.proto). Changing one breaks every reader.
 *
 * Order: the trace processor sorts packets by timestamp before it parses
 * them, so tracks are written one after the other; inside a track, a slice's
 * end comes before a sibling that begins at the same time, which the sort
 * keeps (it is stable).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "render/trace.h"

/* protobuf wire types */
#define WT_VARINT 0
#define WT_I64    1
#define WT_LEN    2

/* Trace */
#define F_TRACE_PACKET 1
/* TracePacket */
#define F_PKT_TIMESTAMP               8
#define F_PKT_SEQ_ID                  10 /* trusted_packet_sequence_id */
#define F_PKT_TRACK_EVENT             11
#define F_PKT_INTERNED_DATA           12
#define F_PKT_SEQ_FLAGS               13
#define F_PKT_TRACK_DESCR             60
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE   2
/* TrackEvent */
#define F_TE_CATEGORY_IIDS  3
#define F_TE_DEBUG_ANNOT    4
#define F_TE_TYPE           9
#define F_TE_NAME_IID       10
#define F_TE_TRACK_UUID     11
#define F_TE_NAME           23
#define F_TE_DOUBLE_COUNTER 44
#define TYPE_SLICE_BEGIN    1
#define TYPE_SLICE_END      2
#define TYPE_INSTANT        3
#define TYPE_COUNTER        4
/* DebugAnnotation */
#define F_DA_INT_VALUE    4
#define F_DA_STRING_VALUE 6
#define F_DA_NAME         10
/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define F_TD_UUID        1
#define F_TD_NAME        2
#define F_TD_PROCESS     3
#define F_TD_THREAD      4
#define F_TD_PARENT_UUID 5
#define F_TD_COUNTER     8
#define F_PD_PID         1
#define F_PD_NAME        6 /* process_name */
#define F_THD_PID        1
#define F_THD_TID        2
#define F_THD_NAME       5 /* thread_name */
/* InternedData, EventCategory, EventName */
#define F_ID_EVENT_CATEGORIES 1
#define F_ID_EVENT_NAMES      2
#define F_IN_IID              1
#define F_IN_NAME             2

#define SEQ_ID         1   /* the one sequence this writer emits */
#define PY_TRACE_DEPTH 256 /* Python frames nested on a track that are written (PY_STACK_MAX) */

/* A message being built; failed sticks once memory ran out. */
struct pb {
    struct strbuf b;
    int failed;
};

static void pb_varint(struct pb *m, uint64_t v)
{
    if (strbuf_grow(&m->b, 10) < 0) {
        m->failed = 1;
        return;
    }
    uint8_t *p = (uint8_t *)m->b.buf + m->b.len, *start = p;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    m->b.len += (size_t)(p - start);
    m->b.buf[m->b.len] = '\0';
}

static void pb_tag(struct pb *m, unsigned field, unsigned wt)
{
    pb_varint(m, (uint64_t)field << 3 | wt);
}

static void pb_u64(struct pb *m, unsigned field, uint64_t v)
{
    pb_tag(m, field, WT_VARINT);
    pb_varint(m, v);
}

/* int32/int64 fields: a negative value is its two's complement, 10 bytes */
static void pb_i64(struct pb *m, unsigned field, int64_t v)
{
    pb_u64(m, field, (uint64_t)v);
}

static void pb_bytes(struct pb *m, unsigned field, const void *data, size_t len)
{
    pb_tag(m, field, WT_LEN);
    pb_varint(m, len);
    if (strbuf_add(&m->b, data, len) < 0)
        m->failed = 1;
}

static void pb_str(struct pb *m, unsigned field, const char *s)
{
    pb_bytes(m, field, s, strlen(s));
}

/* A string from outside (a finding's text): made valid UTF-8 first, as
 * protobuf's string type requires. */
static void pb_text(struct pb *m, unsigned field, const char *s)
{
    struct strbuf clean;
    strbuf_init(&clean);
    if (strbuf_add_utf8(&clean, s) < 0)
        m->failed = 1;
    pb_bytes(m, field, clean.buf, clean.len);
    strbuf_release(&clean);
}

static void pb_double(struct pb *m, unsigned field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(bits >> (8 * i)); /* fixed64 is little-endian */
    pb_tag(m, field, WT_I64);
    if (strbuf_add(&m->b, le, sizeof(le)) < 0)
        m->failed = 1;
}

static void pb_msg(struct pb *m, unsigned field, const struct pb *inner)
{
    m->failed |= inner->failed;
    pb_bytes(m, field, inner->b.buf, inner->b.len);
}

static void pb_reset(struct pb *m)
{
    strbuf_reset(&m->b);
}

struct perfetto {
    struct trace *t; /* counts the counter points it reads */
    struct trace_sink *k;
    struct pb pkt, te, sub, sub2; /* scratch messages, reused for every packet */
    uint8_t *named;               /* name id -> already interned on the sequence */
    uint64_t lane_base, counter_base, findings_uuid, py_base;
};

/* Append the packet built in w->pkt to the trace as Trace.packet. */
static int emit(struct perfetto *w)
{
    struct pb out = {w->k->buf, 0};
    pb_msg(&out, F_TRACE_PACKET, &w->pkt);
    w->k->buf = out.b;
    pb_reset(&w->pkt);
    if (out.failed)
        return -ENOMEM;
    return trace_sink_flush(w->k, 0);
}

/* ---- tracks --------------------------------------------------------------- */

static uint64_t proc_uuid(uint32_t proc)
{
    return 1 + (uint64_t)proc;
}

static uint64_t lane_uuid(const struct perfetto *w, uint32_t thread, uint32_t lane)
{
    return w->lane_base + (uint64_t)thread * TRACE_LANES_MAX + lane;
}

static int track_packet(struct perfetto *w, const struct pb *descr)
{
    pb_u64(&w->pkt, F_PKT_SEQ_ID, SEQ_ID);
    pb_msg(&w->pkt, F_PKT_TRACK_DESCR, descr);
    return emit(w);
}

/* A process track, or for a metrics process a plain named track: the
 * counters' group. */
static int describe_proc(struct perfetto *w, uint32_t i)
{
    const struct trace_proc *p = &w->t->procs[i];
    pb_reset(&w->te);
    pb_reset(&w->sub);
    pb_u64(&w->te, F_TD_UUID, proc_uuid(i));
    if (p->metrics) {
        pb_str(&w->te, F_TD_NAME, p->name);
    } else {
        pb_i64(&w->sub, F_PD_PID, p->pid);
        pb_str(&w->sub, F_PD_NAME, p->name);
        pb_msg(&w->te, F_TD_PROCESS, &w->sub);
    }
    return track_packet(w, &w->te);
}

static int describe_thread(struct perfetto *w, uint32_t i)
{
    const struct trace_thread *th = &w->t->threads[i];
    pb_reset(&w->te);
    pb_reset(&w->sub);
    pb_u64(&w->te, F_TD_UUID, lane_uuid(w, i, 0)); /* its pid ties it to its process */
    pb_i64(&w->sub, F_THD_PID, th->pid);
    pb_i64(&w->sub, F_THD_TID, th->tid);
    pb_str(&w->sub, F_THD_NAME, th->name);
    pb_msg(&w->te, F_TD_THREAD, &w->sub);
    int rc = track_packet(w, &w->te);
    for (uint32_t l = 1; l < th->lanes && rc == 0; l++) { /* overlapping spans */
        char name[64];
        snprintf(name, sizeof(name), "%s (overlap %u)", th->name, l);
        pb_reset(&w->te);
        pb_u64(&w->te, F_TD_UUID, lane_uuid(w, i, l));
        pb_u64(&w->te, F_TD_PARENT_UUID, proc_uuid(th->proc));
        pb_str(&w->te, F_TD_NAME, name);
        rc = track_packet(w, &w->te);
    }
    return rc;
}

static int describe_counter(struct perfetto *w, uint32_t i)
{
    const struct trace_counter *k = &w->t->counters[i];
    pb_reset(&w->te);
    pb_reset(&w->sub);
    pb_u64(&w->te, F_TD_UUID, w->counter_base + i);
    pb_u64(&w->te, F_TD_PARENT_UUID, proc_uuid(k->proc));
    pb_str(&w->te, F_TD_NAME, k->name);
    pb_msg(&w->te, F_TD_COUNTER, &w->sub); /* empty: a plain counter */
    return track_packet(w, &w->te);
}

static int describe_tracks(struct perfetto *w)
{
    const struct trace *t = w->t;
    int rc = 0;
    for (uint32_t i = 0; i < t->nprocs && rc == 0; i++)
        rc = describe_proc(w, i);
    for (uint32_t i = 0; i < t->nthreads && rc == 0; i++)
        rc = describe_thread(w, i);
    for (uint32_t i = 0; i < t->ncounters && rc == 0; i++)
        rc = describe_counter(w, i);
    for (uint32_t i = 0; i < t->npy_tracks && rc == 0; i++) { /* a named track in its process */
        pb_reset(&w->te);
        pb_u64(&w->te, F_TD_UUID, w->py_base + i);
        pb_u64(&w->te, F_TD_PARENT_UUID, proc_uuid(t->py_tracks[i].proc));
        pb_str(&w->te, F_TD_NAME, t->py_tracks[i].name);
        rc = track_packet(w, &w->te);
    }
    if (rc == 0 && t->nfindings) {
        pb_reset(&w->te);
        pb_u64(&w->te, F_TD_UUID, w->findings_uuid);
        pb_u64(&w->te, F_TD_PARENT_UUID, proc_uuid(0));
        pb_str(&w->te, F_TD_NAME, "findings");
        rc = track_packet(w, &w->te);
    }
    return rc;
}

/* The first packet: clears the sequence's incremental state and interns
 * the categories, so every later packet may refer to them. */
static int start_sequence(struct perfetto *w)
{
    pb_reset(&w->te);
    for (unsigned c = 0; c < TRACE_CAT_COUNT; c++) {
        pb_reset(&w->sub);
        pb_u64(&w->sub, F_IN_IID, c + 1);
        pb_str(&w->sub, F_IN_NAME, trace_cat_names[c]);
        pb_msg(&w->te, F_ID_EVENT_CATEGORIES, &w->sub);
    }
    pb_u64(&w->pkt, F_PKT_SEQ_ID, SEQ_ID);
    pb_u64(&w->pkt, F_PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    pb_msg(&w->pkt, F_PKT_INTERNED_DATA, &w->te);
    return emit(w);
}

/* ---- events --------------------------------------------------------------- */

/* A TrackEvent packet from w->te; interns name id when this is its first
 * use on the sequence. */
static int event_packet(struct perfetto *w, int64_t ts_ns, uint32_t name)
{
    pb_u64(&w->pkt, F_PKT_TIMESTAMP, (uint64_t)ts_ns);
    pb_msg(&w->pkt, F_PKT_TRACK_EVENT, &w->te);
    pb_u64(&w->pkt, F_PKT_SEQ_ID, SEQ_ID);
    if (name) {
        pb_u64(&w->pkt, F_PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
        if (!w->named[name]) {
            w->named[name] = 1;
            pb_reset(&w->sub);
            pb_reset(&w->sub2);
            pb_u64(&w->sub2, F_IN_IID, name);
            pb_str(&w->sub2, F_IN_NAME, trace_name(w->t, name));
            pb_msg(&w->sub, F_ID_EVENT_NAMES, &w->sub2);
            pb_msg(&w->pkt, F_PKT_INTERNED_DATA, &w->sub);
        }
    }
    return emit(w);
}

static void named_event(struct perfetto *w, unsigned type, uint64_t track, uint32_t name,
                        uint8_t cat)
{
    pb_reset(&w->te);
    pb_u64(&w->te, F_TE_TYPE, type);
    pb_u64(&w->te, F_TE_TRACK_UUID, track);
    pb_u64(&w->te, F_TE_CATEGORY_IIDS, (uint64_t)cat + 1);
    if (name)
        pb_u64(&w->te, F_TE_NAME_IID, name);
}

/* A debug annotation {name: int} on w->te. */
static void annotate_int(struct perfetto *w, const char *key, int64_t v)
{
    pb_reset(&w->sub);
    pb_str(&w->sub, F_DA_NAME, key);
    pb_i64(&w->sub, F_DA_INT_VALUE, v);
    pb_msg(&w->te, F_TE_DEBUG_ANNOT, &w->sub);
}

static void annotate_str(struct perfetto *w, const char *key, const char *v)
{
    pb_reset(&w->sub);
    pb_str(&w->sub, F_DA_NAME, key);
    pb_text(&w->sub, F_DA_STRING_VALUE, v ? v : "");
    pb_msg(&w->te, F_TE_DEBUG_ANNOT, &w->sub);
}

static int slice_end(struct perfetto *w, uint64_t track, int64_t ts_ns)
{
    pb_reset(&w->te);
    pb_u64(&w->te, F_TE_TYPE, TYPE_SLICE_END);
    pb_u64(&w->te, F_TE_TRACK_UUID, track);
    return event_packet(w, ts_ns, 0);
}

/* Slices as begin/end pairs, lane by lane: before a slice begins, the
 * slices open on its lane that ended by then are closed. */
static int write_slices(struct perfetto *w, uint32_t ti)
{
    const struct trace_thread *th = &w->t->threads[ti];
    int64_t open[TRACE_LANES_MAX][TRACE_DEPTH_MAX];
    uint32_t depth[TRACE_LANES_MAX] = {0};
    int rc = 0;
    for (uint32_t i = 0; i < th->nslices && rc == 0; i++) {
        const struct trace_slice *s = &th->slices[i];
        uint32_t l = s->lane;
        uint64_t track = lane_uuid(w, ti, l);
        while (rc == 0 && depth[l] && open[l][depth[l] - 1] <= s->start_ns)
            rc = slice_end(w, track, open[l][--depth[l]]);
        if (rc == 0 && depth[l] == TRACE_DEPTH_MAX) /* deeper than kept: close the innermost now */
            rc = slice_end(w, track, open[l][--depth[l]]);
        named_event(w, TYPE_SLICE_BEGIN, track, s->name, s->cat);
        if (s->cat == TRACE_CAT_STEP)
            annotate_int(w, "step", s->step);
        if (rc == 0)
            rc = event_packet(w, s->start_ns, s->name);
        open[l][depth[l]++] = s->end_ns;
    }
    for (uint32_t l = 0; l < TRACE_LANES_MAX && rc == 0; l++)
        while (rc == 0 && depth[l])
            rc = slice_end(w, lane_uuid(w, ti, l), open[l][--depth[l]]);
    return rc;
}

static int write_instants(struct perfetto *w, uint32_t ti)
{
    const struct trace_thread *th = &w->t->threads[ti];
    int rc = 0;
    for (uint32_t i = 0; i < th->ninstants && rc == 0; i++) {
        const struct trace_instant *in = &th->instants[i];
        named_event(w, TYPE_INSTANT, lane_uuid(w, ti, 0), in->name, in->cat);
        annotate_int(w, "step", in->step);
        rc = event_packet(w, in->ts_ns, in->name);
    }
    return rc;
}

/* A Python track's slices as begin/end pairs, names inline (frames are
 * many, each used on few tracks). They nest properly by construction. */
static int write_py_track(struct perfetto *w, uint32_t ti)
{
    const struct trace_py_track *k = &w->t->py_tracks[ti];
    uint64_t track = w->py_base + ti;
    int64_t open[PY_TRACE_DEPTH];
    uint32_t depth = 0;
    int rc = 0;
    for (uint32_t i = 0; i < k->nslices && rc == 0; i++) {
        const struct trace_py_slice *s = &k->slices[i];
        while (rc == 0 && depth > s->depth)
            rc = slice_end(w, track, open[--depth]);
        if (rc < 0 || s->depth >= PY_TRACE_DEPTH)
            continue;
        pb_reset(&w->te);
        pb_u64(&w->te, F_TE_TYPE, TYPE_SLICE_BEGIN);
        pb_u64(&w->te, F_TE_TRACK_UUID, track);
        pb_u64(&w->te, F_TE_CATEGORY_IIDS, (uint64_t)TRACE_CAT_PYTHON + 1);
        pb_str(&w->te, F_TE_NAME, w->t->py_frames[s->frame]);
        rc = event_packet(w, s->start_ns, 0);
        open[depth++] = s->end_ns;
    }
    while (rc == 0 && depth)
        rc = slice_end(w, track, open[--depth]);
    return rc;
}

struct counter_out {
    struct perfetto *w;
    uint64_t track_uuid;
};

static int write_counter_points(const struct point *p, size_t n, void *arg)
{
    struct counter_out *o = arg;
    struct perfetto *w = o->w;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        pb_reset(&w->te);
        pb_u64(&w->te, F_TE_TYPE, TYPE_COUNTER);
        pb_u64(&w->te, F_TE_TRACK_UUID, o->track_uuid);
        pb_double(&w->te, F_TE_DOUBLE_COUNTER, p[i].value);
        rc = event_packet(w, p[i].ts_ns, 0);
    }
    return rc;
}

static int write_counter(struct perfetto *w, uint32_t ci)
{
    struct counter_out o = {w, w->counter_base + ci};
    return trace_counter_points(w->t, ci, write_counter_points, &o);
}

/* Findings: instants on the findings track, their text as annotations. */
static int write_findings(struct perfetto *w)
{
    const struct trace *t = w->t;
    int rc = 0;
    for (uint32_t i = 0; i < t->nfindings && rc == 0; i++) {
        const struct finding_record *f = &t->findings[t->finding_idx[i]];
        struct strbuf name;
        strbuf_init(&name);
        strbuf_addf(&name, "%s (%s)", f->rule ? f->rule : "", f->severity ? f->severity : "");
        named_event(w, TYPE_INSTANT, w->findings_uuid, 0, TRACE_CAT_FINDING);
        pb_text(&w->te, F_TE_NAME, name.buf);
        strbuf_release(&name);
        annotate_str(w, "rule", f->rule);
        annotate_str(w, "severity", f->severity);
        annotate_str(w, "scope", f->scope);
        annotate_int(w, "end_ns", f->end_ns);
        annotate_str(w, "evidence", f->evidence);
        annotate_str(w, "steps", f->events);
        annotate_str(w, "recommendation", f->recommendation);
        rc = event_packet(w, f->start_ns, 0);
    }
    return rc;
}

int trace_write_perfetto(struct trace *t, struct trace_sink *k)
{
    struct perfetto w;
    memset(&w, 0, sizeof(w));
    w.t = t;
    w.k = k;
    strbuf_init(&w.pkt.b);
    strbuf_init(&w.te.b);
    strbuf_init(&w.sub.b);
    strbuf_init(&w.sub2.b);
    w.lane_base = proc_uuid(t->nprocs);
    w.counter_base = w.lane_base + (uint64_t)t->nthreads * TRACE_LANES_MAX;
    w.findings_uuid = w.counter_base + t->ncounters;
    w.py_base = w.findings_uuid + 1;
    int rc = (w.named = calloc(t->ev.nnames + 1, 1)) ? 0 : -ENOMEM;
    if (rc == 0)
        rc = start_sequence(&w);
    if (rc == 0)
        rc = describe_tracks(&w);
    for (uint32_t i = 0; i < t->nthreads && rc == 0; i++) {
        rc = write_slices(&w, i);
        if (rc == 0)
            rc = write_instants(&w, i);
    }
    for (uint32_t i = 0; i < t->npy_tracks && rc == 0; i++)
        rc = write_py_track(&w, i);
    for (uint32_t i = 0; i < t->ncounters && rc == 0; i++)
        rc = write_counter(&w, i);
    if (rc == 0)
        rc = write_findings(&w);
    free(w.named);
    strbuf_release(&w.pkt.b);
    strbuf_release(&w.te.b);
    strbuf_release(&w.sub.b);
    strbuf_release(&w.sub2.b);
    return rc;
}
