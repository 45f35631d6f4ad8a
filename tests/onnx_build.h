/* A small ONNX model builder for tests (tests/test_bad_input.c,
 * tests/test_onnx_write.c), on the protobuf-c code generated at build time.
 * Everything is allocated with calloc and freed at once by ob_free.
 * Functions act on b->graph: set it to a graph made by ob_graph to build a
 * body (If/Loop/Scan), then set it back. Header-only (static inline) so
 * that each suite that includes it stays one file. Needs MP_WITH_ONNX. */
#ifndef MP_TEST_ONNX_BUILD_H
#define MP_TEST_ONNX_BUILD_H

#include "onnx.pb-c.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>

#define OB_CAP 16 /* nodes, inputs, ... per graph */

typedef struct ob {
    void *ptrs[1024];
    size_t n;
    Onnx__ModelProto model;
    Onnx__GraphProto *graph, *top;
    Onnx__OperatorSetIdProto opset, *opsets[1];
} ob;

static inline void *ob_new(ob *b, size_t size)
{
    void *p = calloc(1, size ? size : 1);
    CU_ASSERT_FATAL(p != NULL && b->n < sizeof b->ptrs / sizeof b->ptrs[0]);
    b->ptrs[b->n++] = p;
    return p;
}

/* an empty graph with room for OB_CAP of everything */
static inline Onnx__GraphProto *ob_graph(ob *b, const char *name)
{
    Onnx__GraphProto *g = ob_new(b, sizeof *g);
    onnx__graph_proto__init(g);
    g->name = (char *)name;
    g->node = ob_new(b, OB_CAP * sizeof *g->node);
    g->input = ob_new(b, OB_CAP * sizeof *g->input);
    g->output = ob_new(b, OB_CAP * sizeof *g->output);
    g->value_info = ob_new(b, OB_CAP * sizeof *g->value_info);
    g->initializer = ob_new(b, OB_CAP * sizeof *g->initializer);
    return g;
}

static inline void ob_init(ob *b, int64_t ir, int64_t opset)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->model);
    onnx__operator_set_id_proto__init(&b->opset);
    b->model.has_ir_version = 1;
    b->model.ir_version = ir;
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opset.domain = (char *)"";
    b->opsets[0] = &b->opset;
    b->model.n_opset_import = 1;
    b->model.opset_import = b->opsets;
    b->top = b->graph = ob_graph(b, "test");
    b->model.graph = b->top;
}

static inline void ob_free(ob *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->ptrs[i]);
    b->n = 0;
}

/* a tensor type of elem and dims (rank < 0: no shape) */
static inline Onnx__ValueInfoProto *ob_vi(ob *b, const char *name, int elem,
                                          int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = ob_new(b, sizeof *v);
    Onnx__TypeProto *tp = ob_new(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ob_new(b, sizeof *tt);
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    v->name = (char *)name;
    v->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank < 0)
        return v;
    Onnx__TensorShapeProto *sh = ob_new(b, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)rank;
    sh->dim = ob_new(b, (size_t)(rank + 1) * sizeof *sh->dim);
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = ob_new(b, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = dims[i];
        sh->dim[i] = d;
    }
    tt->shape = sh;
    return v;
}

static inline void ob_input(ob *b, const char *name, int elem, int rank,
                            const int64_t *dims)
{
    b->graph->input[b->graph->n_input++] = ob_vi(b, name, elem, rank, dims);
}

static inline void ob_output(ob *b, const char *name, int elem, int rank,
                             const int64_t *dims)
{
    b->graph->output[b->graph->n_output++] = ob_vi(b, name, elem, rank, dims);
}

static inline void ob_value_info(ob *b, const char *name, int elem, int rank,
                                 const int64_t *dims)
{
    b->graph->value_info[b->graph->n_value_info++] =
        ob_vi(b, name, elem, rank, dims);
}

/* a float initializer with dims and no data (EXTERNAL, never read) */
static inline void ob_init_tensor(ob *b, const char *name, int rank,
                                  const int64_t *dims)
{
    Onnx__TensorProto *t = ob_new(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = 1; /* float32 */
    t->n_dims = (size_t)rank;
    t->dims = (int64_t *)dims;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    b->graph->initializer[b->graph->n_initializer++] = t;
}

/* a node with one or two inputs (in1 NULL: one) and one output */
static inline Onnx__NodeProto *ob_node(ob *b, const char *op,
                                       const char *name, const char *in0,
                                       const char *in1, const char *out0)
{
    Onnx__NodeProto *n = ob_new(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    n->input = ob_new(b, 2 * sizeof *n->input);
    n->input[n->n_input++] = (char *)in0;
    if (in1)
        n->input[n->n_input++] = (char *)in1;
    n->output = ob_new(b, sizeof *n->output);
    n->output[n->n_output++] = (char *)out0;
    n->attribute = ob_new(b, 4 * sizeof *n->attribute);
    b->graph->node[b->graph->n_node++] = n;
    return n;
}

static inline Onnx__AttributeProto *ob_attr(ob *b, Onnx__NodeProto *n,
                                            const char *name, int type)
{
    Onnx__AttributeProto *a = ob_new(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = (Onnx__AttributeProto__AttributeType)type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static inline void ob_attr_int(ob *b, Onnx__NodeProto *n, const char *name,
                               int64_t v)
{
    Onnx__AttributeProto *a =
        ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static inline void ob_attr_graph(ob *b, Onnx__NodeProto *n, const char *name,
                                 Onnx__GraphProto *g)
{
    ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = g;
}

static inline uint8_t *ob_pack(ob *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->model);
    uint8_t *buf = ob_new(b, *len + 1);
    onnx__model_proto__pack(&b->model, buf);
    return buf;
}

#ifdef MP__IR_H
/* Loads the model built in b (declared shapes ignored: everything is
 * inferred) with the nv input values vals; *g NULL on failure. */
static inline mp_status ob_load_values(ob *b, mp_ctx *ctx,
                                       const mp_input_value *vals, size_t nv,
                                       mp_graph **g)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.declared_shapes = 0;
    o.values = vals;
    o.n_values = nv;
    *g = NULL;
    return mp_graph_load_onnx_buffer(ctx, buf, len, "t.onnx", &o, g);
}

/* The tensor named name (the test stops when there is none). */
static inline const mp__tensor *ob_tensor(const mp_graph *g, const char *name)
{
    uint32_t id;
    CU_ASSERT_FATAL(mp_graph_find_tensor(g, name, &id) == MP_OK);
    return &g->tensors[id];
}
#endif

#endif
