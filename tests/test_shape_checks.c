/* Shape functions check their attributes and inputs against the ONNX
 * operator spec (core/ops/shape.c: mp__check_*): one case per rejected
 * condition, each a JSON graph of one node (plus Constant nodes for
 * values), asserting the library status and a fragment of the message
 * (which names the node, the attribute or input, the entry and its
 * value); valid neighbours of the rejected graphs still load; a few go
 * through the command for the exit codes (3 for a bad attribute, 11 for a
 * rank above 16, 12 for window arithmetic that overflows). */
#include "support.h"

#include "ir.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* JSON written with single quotes; ints in a tensor list: 'x' float32 */
#define X(shape) "{'name':'x','dtype':'float32','shape':" shape ",'kind':'input'}"
#define W(shape) ",{'name':'w','dtype':'float32','shape':" shape ",'kind':'weight'}"
#define B(name, shape) ",{'name':'" name "','dtype':'float32','shape':" shape ",'kind':'input'}"
#define I(name, shape) ",{'name':'" name "','dtype':'int64','shape':" shape ",'kind':'input'}"
/* an int64 constant `name` of dims `dims` and values `ints` */
#define K(name, dims, ints)                                                   \
    "{'name':'k_" name "','op':'Constant','inputs':[],'outputs':['" name     \
    "'],'attributes':{'value.dtype':7,'value.dims':" dims ",'value.ints':" ints \
    "}},"
/* the node under test, named n, output y */
#define N(op, ins, attrs)                                                     \
    "{'name':'n','op':'" op "','inputs':" ins ",'outputs':['y'],'attributes':{" \
    attrs "}}"
#define N2(op, ins, attrs)                                                    \
    "{'name':'n','op':'" op "','inputs':" ins ",'outputs':['y','z'],"       \
    "'attributes':{" attrs "}}"

#define P62 "4611686018427387904" /* 2^62 */

typedef struct {
    const char *what;    /* the condition */
    const char *tensors; /* the tensor list */
    const char *nodes;   /* the node list (Constants, then the node) */
    mp_status st;        /* MP_OK: a valid graph that must load */
    const char *frag;    /* in the message (NULL for MP_OK) */
} check_case;

static const check_case cases[] = {
    /* ---- Conv ---- */
    {"Conv strides count", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'strides':[1]"), MP_ERR_SHAPE,
     "node 'n' (op Conv): attribute 'strides' has 1 entries, expected 2"},
    {"Conv stride 0", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'strides':[1,0]"), MP_ERR_SHAPE,
     "attribute 'strides'[1] = 0: must be >= 1"},
    {"Conv dilation 0", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'dilations':[0,1]"), MP_ERR_SHAPE,
     "attribute 'dilations'[0] = 0: must be >= 1"},
    {"Conv dilations count", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'dilations':[1,1,1]"), MP_ERR_SHAPE,
     "attribute 'dilations' has 3 entries, expected 2"},
    {"Conv pads count", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'pads':[1,1]"), MP_ERR_SHAPE,
     "attribute 'pads' has 2 entries, expected 4"},
    {"Conv negative pad", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'pads':[0,0,-1,0]"), MP_ERR_SHAPE,
     "node 'n' (op Conv): attribute 'pads'[2] = -1: must be >= 0"},
    {"Conv kernel larger than the padded input", X("[1,3,4,4]") W("[4,3,7,7]"),
     N("Conv", "['x','w']", "'pads':[1,1,1,1]"), MP_ERR_SHAPE,
     "spatial dim 0: the kernel (7, dilated 7) is larger than the padded "
     "input (6)"},
    {"Conv huge dilation", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'dilations':[1000,1]"), MP_ERR_SHAPE,
     "the kernel (3, dilated 2001) is larger than the input (8)"},
    {"Conv dilated kernel overflows", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'dilations':[" P62 ",1]"), MP_ERR_OVERFLOW,
     "the dilated kernel (dilation 4611686018427387904, kernel 3) overflows"},
    {"Conv pads overflow", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'pads':[" P62 ",0," P62 ",0]"), MP_ERR_OVERFLOW,
     "spatial dim 0: input 8 with pads 4611686018427387904 and "
     "4611686018427387904 overflows 64 bits"},
    {"Conv auto_pad value", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'auto_pad':'SAME'"), MP_ERR_SHAPE,
     "attribute 'auto_pad' = 'SAME': must be 'NOTSET', 'SAME_UPPER', "
     "'SAME_LOWER' or 'VALID'"},
    {"Conv group 0", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'group':0"), MP_ERR_SHAPE,
     "attribute 'group' = 0: must be >= 1"},
    {"Conv channels", X("[1,3,8,8]") W("[4,4,3,3]"),
     N("Conv", "['x','w']", ""), MP_ERR_SHAPE,
     "input 'x' has 3 channels, weight 'w' 4 per group x group 1"},
    {"Conv output channels and group", X("[1,4,8,8]") W("[6,1,3,3]"),
     N("Conv", "['x','w']", "'group':4"), MP_ERR_SHAPE,
     "weight 'w' has 6 output channels: not a multiple of group 4"},
    {"Conv weight rank", X("[1,3,8,8]") W("[4,3,3]"),
     N("Conv", "['x','w']", ""), MP_ERR_SHAPE,
     "weight 'w' has rank 3, the input 4"},
    {"Conv kernel_shape against the weight", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'kernel_shape':[5,3]"), MP_ERR_SHAPE,
     "attribute 'kernel_shape'[0] = 5: the weight 'w' has 3"},
    {"Conv kernel_shape count", X("[1,3,8,8]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'kernel_shape':[3]"), MP_ERR_SHAPE,
     "attribute 'kernel_shape' has 1 entries, expected 2"},
    {"Conv input rank", X("[3]") W("[4,3,3,3]"), N("Conv", "['x','w']", ""),
     MP_ERR_SHAPE, "input 'x' has rank 1: it needs at least 2"},
    {"Conv valid (pads, strides, dilations, group)", X("[1,4,9,9]")
     W("[8,2,3,3]"), N("Conv", "['x','w']", "'pads':[1,1,1,1],'strides':[2,2],"
                       "'dilations':[2,2],'group':2"), MP_OK, NULL},
    {"Conv valid SAME_UPPER", X("[1,3,7,7]") W("[4,3,3,3]"),
     N("Conv", "['x','w']", "'auto_pad':'SAME_UPPER','strides':[2,2]"), MP_OK,
     NULL},
    /* ---- ConvTranspose ---- */
    {"ConvTranspose output_padding >= stride", X("[1,3,8,8]") W("[3,4,3,3]"),
     N("ConvTranspose", "['x','w']", "'strides':[2,2],'output_padding':[2,0]"),
     MP_ERR_SHAPE, "attribute 'output_padding'[0] = 2: must be less than the "
                   "stride (2) or the dilation (1)"},
    {"ConvTranspose negative output_padding", X("[1,3,8,8]") W("[3,4,3,3]"),
     N("ConvTranspose", "['x','w']", "'output_padding':[-1,0]"), MP_ERR_SHAPE,
     "attribute 'output_padding'[0] = -1: must be >= 0"},
    {"ConvTranspose pads leave nothing", X("[1,3,2,2]") W("[3,4,3,3]"),
     N("ConvTranspose", "['x','w']", "'pads':[2,0,2,0]"), MP_ERR_SHAPE,
     "spatial dim 0: the output would be 0 (pads 2 + 2): it must be >= 1"},
    {"ConvTranspose channels", X("[1,3,8,8]") W("[4,4,3,3]"),
     N("ConvTranspose", "['x','w']", ""), MP_ERR_SHAPE,
     "input 'x' has 3 channels, weight 'w' 4"},
    {"ConvTranspose stride 0", X("[1,3,8,8]") W("[3,4,3,3]"),
     N("ConvTranspose", "['x','w']", "'strides':[0,1]"), MP_ERR_SHAPE,
     "attribute 'strides'[0] = 0: must be >= 1"},
    {"ConvTranspose output overflows", X("[1,3,8,8]") W("[3,4,3,3]"),
     N("ConvTranspose", "['x','w']", "'strides':[" P62 ",1]"),
     MP_ERR_OVERFLOW, "spatial dim 0: the output size"},
    {"ConvTranspose valid", X("[1,3,8,8]") W("[3,4,3,3]"),
     N("ConvTranspose", "['x','w']", "'strides':[2,2],'output_padding':[1,1],"
       "'pads':[1,1,1,1]"), MP_OK, NULL},
    /* ---- pools ---- */
    {"MaxPool kernel 0", X("[1,3,8,8]"),
     N("MaxPool", "['x']", "'kernel_shape':[0,0]"), MP_ERR_SHAPE,
     "node 'n' (op MaxPool): attribute 'kernel_shape'[0] = 0: must be >= 1"},
    {"MaxPool kernel_shape missing", X("[1,3,8,8]"), N("MaxPool", "['x']", ""),
     MP_ERR_SHAPE, "attribute 'kernel_shape' is missing"},
    {"AveragePool kernel_shape count", X("[1,3,8,8]"),
     N("AveragePool", "['x']", "'kernel_shape':[2]"), MP_ERR_SHAPE,
     "attribute 'kernel_shape' has 1 entries, expected 2"},
    {"MaxPool kernel larger than the input", X("[1,3,1,8]"),
     N("MaxPool", "['x']", "'kernel_shape':[2,2],'strides':[2,2]"),
     MP_ERR_SHAPE, "the kernel (2, dilated 2) is larger than the input (1)"},
    {"AveragePool negative pad", X("[1,3,8,8]"),
     N("AveragePool", "['x']", "'kernel_shape':[2,2],'pads':[0,-1,0,0]"),
     MP_ERR_SHAPE, "attribute 'pads'[1] = -1: must be >= 0"},
    {"MaxPool valid ceil_mode", X("[1,3,8,8]"),
     N("MaxPool", "['x']", "'kernel_shape':[3,3],'strides':[2,2],'ceil_mode':1"),
     MP_OK, NULL},
    {"MaxUnpool kernel 0", X("[1,3,4,4]"),
     N("MaxUnpool", "['x','x']", "'kernel_shape':[0,2]"), MP_ERR_SHAPE,
     "attribute 'kernel_shape'[0] = 0: must be >= 1"},
    /* ---- Split ---- */
    {"Split sizes do not sum to the dim", X("[2,3]"),
     N2("Split", "['x']", "'split':[5,7]"), MP_ERR_SHAPE,
     "attribute 'split' sums to 12, but axis 0 of input 'x' has 2"},
    {"Split negative size", X("[2,3]"), N2("Split", "['x']", "'split':[-1,3]"),
     MP_ERR_SHAPE, "attribute 'split'[0] = -1: must be >= 0"},
    {"Split count", X("[2,3]"), N2("Split", "['x']", "'split':[1,1,0]"),
     MP_ERR_SHAPE, "attribute 'split' has 3 entries for 2 outputs"},
    {"Split sizes as an input", X("[2,3]"),
     K("s", "[2]", "[1,2]") N2("Split", "['x','s']", ""), MP_ERR_SHAPE,
     "input 'split' sums to 3, but axis 0 of input 'x' has 2"},
    {"Split axis", X("[2,3]"), N2("Split", "['x']", "'axis':2"), MP_ERR_SHAPE,
     "attribute 'axis' = 2: must be in [-2, 1] (input rank 2)"},
    {"Split num_outputs", X("[2,3]"), N2("Split", "['x']", "'num_outputs':3"),
     MP_ERR_SHAPE, "attribute 'num_outputs' = 3: the node has 2 outputs"},
    {"Split valid", X("[5,3]"), N2("Split", "['x']", "'split':[2,3]"), MP_OK,
     NULL},
    /* ---- Gather family, Scatter family ---- */
    {"Gather index above the dim", X("[3,4]"),
     K("i", "[2]", "[1,5]") N("Gather", "['x','i']", "'axis':1"), MP_ERR_SHAPE,
     "node 'n' (op Gather): input 'i'[1] = 5: an index into axis 1 (of 4) "
     "must be in [-4, 3]"},
    {"Gather index below -dim", X("[3,4]"),
     K("i", "[1]", "[-4]") N("Gather", "['x','i']", ""), MP_ERR_SHAPE,
     "input 'i'[0] = -4: an index into axis 0 (of 3) must be in [-3, 2]"},
    {"Gather axis", X("[3,4]"), K("i", "[1]", "[0]") N("Gather", "['x','i']",
                                                       "'axis':-3"),
     MP_ERR_SHAPE, "attribute 'axis' = -3: must be in [-2, 1]"},
    {"Gather valid negative index", X("[3,4]"),
     K("i", "[2]", "[-3,2]") N("Gather", "['x','i']", ""), MP_OK, NULL},
    {"GatherElements ranks", X("[3,4]") I("i", "[3]"),
     N("GatherElements", "['x','i']", ""), MP_ERR_SHAPE,
     "indices 'i' have rank 1, data 'x' 2"},
    {"GatherElements index", X("[3,4]"),
     K("i", "[1,2]", "[0,7]") N("GatherElements", "['x','i']", "'axis':1"),
     MP_ERR_SHAPE, "input 'i'[1] = 7: an index into axis 1 (of 4)"},
    {"ScatterElements shapes", X("[3,4]") I("i", "[2,2]") B("u", "[2,3]"),
     N("ScatterElements", "['x','i','u']", ""), MP_ERR_SHAPE,
     "updates 'u' and indices 'i' differ in shape"},
    {"ScatterElements reduction", X("[3,4]") I("i", "[2,2]") B("u", "[2,2]"),
     N("ScatterElements", "['x','i','u']", "'reduction':'sum'"), MP_ERR_SHAPE,
     "attribute 'reduction' = 'sum': must be 'none', 'add', 'mul', 'max' or "
     "'min'"},
    {"ScatterND index depth", X("[3,4]") I("i", "[2,3]") B("u", "[2]"),
     N("ScatterND", "['x','i','u']", ""), MP_ERR_SHAPE,
     "indices 'i' have a last dim of 3, above the data's rank 2"},
    {"ScatterND updates", X("[3,4]") I("i", "[2,1]") B("u", "[2,5]"),
     N("ScatterND", "['x','i','u']", ""), MP_ERR_SHAPE,
     "updates 'u' dim 1 = 5: indices.shape[:-1] + data.shape[1:] has 4"},
    {"ScatterND valid", X("[3,4]") I("i", "[2,1]") B("u", "[2,4]"),
     N("ScatterND", "['x','i','u']", ""), MP_OK, NULL},
    {"GatherND batch_dims", X("[3,4]") I("i", "[3,1]"),
     N("GatherND", "['x','i']", "'batch_dims':2"), MP_ERR_SHAPE,
     "attribute 'batch_dims' = 2: must be >= 0 and below the ranks"},
    /* ---- Reshape, Expand, Tile ---- */
    {"Reshape allowzero with 0 and -1", X("[2,3]"),
     K("s", "[2]", "[0,-1]") N("Reshape", "['x','s']", "'allowzero':1"),
     MP_ERR_SHAPE, "the target shape has both 0 and -1"},
    {"Reshape 0 beyond the input rank", X("[6]"),
     K("s", "[2]", "[3,0]") N("Reshape", "['x','s']", ""), MP_ERR_SHAPE,
     "target shape[1] = 0 copies input dim 1, but the input has rank 1"},
    {"Reshape dim below -1", X("[6]"),
     K("s", "[2]", "[3,-2]") N("Reshape", "['x','s']", ""), MP_ERR_SHAPE,
     "target shape[1] = -2: must be >= -1"},
    {"Expand negative dim", X("[1,3]"),
     K("s", "[2]", "[-2,3]") N("Expand", "['x','s']", ""), MP_ERR_SHAPE,
     "input 'shape'[0] = -2: must be >= 0"},
    {"Tile negative repeat", X("[2,3]"),
     K("r", "[2]", "[1,-1]") N("Tile", "['x','r']", ""), MP_ERR_SHAPE,
     "repeats[1] is negative"},
    /* ---- axes and permutations ---- */
    {"Transpose perm repeats an axis", X("[2,3,4]"),
     N("Transpose", "['x']", "'perm':[0,2,0]"), MP_ERR_SHAPE,
     "attribute 'perm'[2] = 0: axis 0 is named twice"},
    {"Transpose perm out of range", X("[2,3,4]"),
     N("Transpose", "['x']", "'perm':[0,3,1]"), MP_ERR_SHAPE,
     "attribute 'perm'[1] = 3: must be in [0, 2]"},
    {"Squeeze a dim that is not 1", X("[1,3]"), N("Squeeze", "['x']",
                                                  "'axes':[1]"),
     MP_ERR_SHAPE, "names axis 1, whose dim is 3: only a dim of 1"},
    {"Squeeze axis twice", X("[1,3,1]"),
     K("a", "[2]", "[0,-3]") N("Squeeze", "['x','a']", ""), MP_ERR_SHAPE,
     "input 'axes'[1] = -3: axis 0 is named twice"},
    {"Unsqueeze axis twice", X("[3]"), N("Unsqueeze", "['x']", "'axes':[0,-3]"),
     MP_ERR_SHAPE, "attribute 'axes'[1] = -3: axis 0 is named twice"},
    {"Unsqueeze axis out of range", X("[3]"),
     N("Unsqueeze", "['x']", "'axes':[2]"), MP_ERR_SHAPE,
     "attribute 'axes'[0] = 2: must be in [-2, 1]"},
    {"Flatten axis", X("[2,3]"), N("Flatten", "['x']", "'axis':3"),
     MP_ERR_SHAPE, "attribute 'axis' = 3: must be in [-2, 2]"},
    {"Concat non-axis dims differ", X("[2,3]") B("b", "[2,4]"),
     N("Concat", "['x','b']", "'axis':0"), MP_ERR_SHAPE,
     "input 'b' has dim 1 = 4, the inputs before it 3: only the axis 0 may "
     "differ"},
    {"Concat axis", X("[2,3]") B("b", "[2,3]"),
     N("Concat", "['x','b']", "'axis':2"), MP_ERR_SHAPE,
     "attribute 'axis' = 2: must be in [-2, 1]"},
    {"Slice axis twice", X("[4,4]"),
     K("s", "[2]", "[0,1]") K("e", "[2]", "[2,3]") K("a", "[2]", "[1,-1]")
     N("Slice", "['x','s','e','a']", ""), MP_ERR_SHAPE,
     "input 'axes'[1] = -1: axis 1 is named twice"},
    {"Slice step 0", X("[4,4]"),
     K("s", "[1]", "[0]") K("e", "[1]", "[2]") K("a", "[1]", "[0]")
     K("t", "[1]", "[0]") N("Slice", "['x','s','e','a','t']", ""),
     MP_ERR_SHAPE, "input 'steps'[0] = 0: a step must not be 0"},
    {"Pad mode", X("[2,3]"), K("p", "[4]", "[0,1,0,1]")
     N("Pad", "['x','p']", "'mode':'mirror'"), MP_ERR_SHAPE,
     "attribute 'mode' = 'mirror': must be 'constant', 'reflect', 'edge' or "
     "'wrap'"},
    {"Pad below zero", X("[2,3]"), K("p", "[4]", "[0,-2,0,-2]")
     N("Pad", "['x','p']", ""), MP_ERR_SHAPE,
     "pads -2 and -2 make dim 1 (3) negative"},
    {"Pad axis twice", X("[2,3]"), K("p", "[4]", "[0,1,0,1]")
     K("a", "[2]", "[1,-1]") N("Pad", "['x','p','','a']", ""), MP_ERR_SHAPE,
     "input 'axes'[1] = -1: axis 1 is named twice"},
    {"ReduceSum axis twice", X("[2,3]"),
     K("a", "[2]", "[1,1]") N("ReduceSum", "['x','a']", ""), MP_ERR_SHAPE,
     "input 'axes'[1] = 1: axis 1 is named twice"},
    {"ReduceMean axis out of range", X("[2,3]"),
     N("ReduceMean", "['x']", "'axes':[2]"), MP_ERR_SHAPE,
     "attribute 'axes'[0] = 2: must be in [-2, 1]"},
    {"ArgMax axis", X("[2,3]"), N("ArgMax", "['x']", "'axis':-3"),
     MP_ERR_SHAPE, "attribute 'axis' = -3: must be in [-2, 1]"},
    {"Softmax axis", X("[2,3]"), N("Softmax", "['x']", "'axis':2"),
     MP_ERR_SHAPE, "node 'n' (op Softmax): attribute 'axis' = 2: must be in "
                   "[-2, 1] (input rank 2)"},
    {"LogSoftmax axis", X("[2,3]"), N("LogSoftmax", "['x']", "'axis':-3"),
     MP_ERR_SHAPE, "attribute 'axis' = -3"},
    {"Hardmax axis", X("[2,3]"), N("Hardmax", "['x']", "'axis':5"),
     MP_ERR_SHAPE, "attribute 'axis' = 5"},
    {"CumSum axis", X("[2,3]"), K("a", "[]", "[2]") N("CumSum", "['x','a']", ""),
     MP_ERR_SHAPE, "input 'axis' = 2: must be in [-2, 1]"},
    {"LayerNormalization axis", X("[2,3]") B("s", "[3]"),
     N("LayerNormalization", "['x','s']", "'axis':2"), MP_ERR_SHAPE,
     "attribute 'axis' = 2"},
    {"MeanVarianceNormalization axis twice", X("[2,3,4]"),
     N("MeanVarianceNormalization", "['x']", "'axes':[0,2,-1]"), MP_ERR_SHAPE,
     "attribute 'axes'[2] = -1: axis 2 is named twice"},
    {"OneHot axis", X("[1]") I("i", "[3]"),
     K("d", "[]", "[4]") K("v", "[2]", "[0,1]")
     N("OneHot", "['i','d','v']", "'axis':2"), MP_ERR_SHAPE,
     "attribute 'axis' = 2: must be in [-2, 1]"},
    {"OneHot depth 0", X("[1]") I("i", "[3]"),
     K("d", "[]", "[0]") K("v", "[2]", "[0,1]")
     N("OneHot", "['i','d','v']", ""), MP_ERR_SHAPE,
     "input 'depth' ('d') = 0: must be >= 1"},
    /* ---- block sizes, counts ---- */
    {"DepthToSpace blocksize 0", X("[1,8,2,2]"),
     N("DepthToSpace", "['x']", "'blocksize':0"), MP_ERR_SHAPE,
     "attribute 'blocksize' = 0: must be >= 1"},
    {"DepthToSpace channels", X("[1,6,2,2]"),
     N("DepthToSpace", "['x']", "'blocksize':2"), MP_ERR_SHAPE,
     "input 'x' has 6 channels: not a multiple of blocksize^2 = 4"},
    {"DepthToSpace mode", X("[1,8,2,2]"),
     N("DepthToSpace", "['x']", "'blocksize':2,'mode':'RCD'"), MP_ERR_SHAPE,
     "attribute 'mode' = 'RCD': must be 'DCR' or 'CRD'"},
    {"SpaceToDepth height", X("[1,2,5,4]"),
     N("SpaceToDepth", "['x']", "'blocksize':2"), MP_ERR_SHAPE,
     "input 'x' has dim 2 = 5: not a multiple of blocksize 2"},
    {"SpaceToDepth rank", X("[2,4,4]"),
     N("SpaceToDepth", "['x']", "'blocksize':2"), MP_ERR_SHAPE,
     "input 'x' has rank 3: it must be 4"},
    {"TopK k above the dim", X("[2,3]"),
     K("k", "[1]", "[4]") N2("TopK", "['x','k']", ""), MP_ERR_SHAPE,
     "k = 4: larger than axis 1 of input 'x' (3)"},
    {"TopK negative k", X("[2,3]"),
     K("k", "[1]", "[-1]") N2("TopK", "['x','k']", ""), MP_ERR_SHAPE,
     "k = -1: must be >= 0"},
    {"Einsum terms and inputs", X("[2,3]") B("b", "[3,4]"),
     N("Einsum", "['x','b']", "'equation':'ij->ij'"), MP_ERR_SHAPE,
     "attribute 'equation' has 1 terms for 2 inputs"},
    {"Einsum letter of two sizes", X("[2,3]") B("b", "[4,5]"),
     N("Einsum", "['x','b']", "'equation':'ij,jk->ik'"), MP_ERR_SHAPE,
     "letter 'j' of the equation stands for dims 3 and 4"},
    {"Einsum output letter twice", X("[2,3]"),
     N("Einsum", "['x']", "'equation':'ij->ii'"), MP_ERR_SHAPE,
     "output letter 'i' appears twice"},
    {"Gemm B rank", X("[2,3]") B("b", "[3,4,1]"), N("Gemm", "['x','b']", ""),
     MP_ERR_SHAPE, "B has rank 3, expected 2"},
    {"Gemm C", X("[2,3]") B("b", "[3,4]") B("c", "[3]"),
     N("Gemm", "['x','b','c']", ""), MP_ERR_SHAPE,
     "C ('c') dim 0 = 3 does not broadcast to the output's 4"},
    {"Upsample scale 0", X("[1,1,4,4]"),
     N("Upsample", "['x']", "'scales':[1.0,1.0,0.0,2.0]"), MP_ERR_SHAPE,
     "attribute 'scales'[2] = 0: must be > 0"},
    {"Resize mode", X("[1,1,4,4]"), K("z", "[4]", "[1,1,8,8]")
     N("Resize", "['x','','','z']", "'mode':'bicubic'"), MP_ERR_SHAPE,
     "attribute 'mode' = 'bicubic': must be 'nearest', 'linear' or 'cubic'"},
    {"Resize axis twice", X("[1,1,4,4]"), K("z", "[2]", "[8,8]")
     N("Resize", "['x','','','z']", "'axes':[2,-2]"), MP_ERR_SHAPE,
     "attribute 'axes'[1] = -2: axis 2 is named twice"},
    {"GroupNormalization groups", X("[1,6,4]") B("s", "[6]") B("b", "[6]"),
     N("GroupNormalization", "['x','s','b']", "'num_groups':4"), MP_ERR_SHAPE,
     "attribute 'num_groups' = 4: the input's 6 channels are not a multiple"},
    {"LSTM direction", X("[5,1,3]") B("w", "[1,16,3]") B("r", "[1,16,4]"),
     N("LSTM", "['x','w','r']", "'hidden_size':4,'direction':'backward'"),
     MP_ERR_SHAPE, "attribute 'direction' = 'backward': must be 'forward', "
                   "'reverse' or 'bidirectional'"},
    {"RNN hidden_size 0", X("[5,1,3]") B("w", "[1,4,3]") B("r", "[1,4,4]"),
     N("RNN", "['x','w','r']", "'hidden_size':0"), MP_ERR_SHAPE,
     "attribute 'hidden_size' = 0: must be >= 1"},
    {"Trilu rank", X("[3]"), N("Trilu", "['x']", ""), MP_ERR_SHAPE,
     "input 'x' has rank 1: it needs at least 2"},
    {"LRN size 0", X("[1,3,4,4]"), N("LRN", "['x']", "'size':0"),
     MP_ERR_SHAPE, "attribute 'size' = 0: must be >= 1"},
    {"ReverseSequence axes", X("[4,2,3]") I("l", "[2]"),
     N("ReverseSequence", "['x','l']", "'batch_axis':0,'time_axis':0"),
     MP_ERR_SHAPE, "'batch_axis' = 0 and 'time_axis' = 0"},
    {"LpNormalization p", X("[2,3]"), N("LpNormalization", "['x']", "'p':3"),
     MP_ERR_SHAPE, "attribute 'p' = 3: must be 1 or 2"},
    {"RoiAlign output_height 0", X("[1,3,8,8]") B("r", "[2,4]") I("b", "[2]"),
     N("RoiAlign", "['x','r','b']", "'output_height':0"), MP_ERR_SHAPE,
     "attribute 'output_height' = 0: must be >= 1"},
    {"STFT frame_step 0", X("[1,64,1]"),
     K("s", "[]", "[0]") K("l", "[]", "[16]")
     N("STFT", "['x','s','','l']", ""), MP_ERR_SHAPE,
     "input 'frame_step' = 0: must be >= 1"},
    {"STFT frame longer than the signal", X("[1,8,1]"),
     K("s", "[]", "[4]") K("l", "[]", "[16]")
     N("STFT", "['x','s','','l']", ""), MP_ERR_SHAPE,
     "frame length 16 is longer than the signal (8)"},
    {"Col2Im block 0", X("[1,4,9]"),
     K("i", "[2]", "[5,5]") K("b", "[2]", "[2,0]")
     N("Col2Im", "['x','i','b']", ""), MP_ERR_SHAPE,
     "input 'block_shape'[1] = 0: must be >= 1"},
    {"AffineGrid size count", X("[1,2,3]"),
     K("s", "[3]", "[1,3,4]") N("AffineGrid", "['x','s']", ""), MP_ERR_SHAPE,
     "input 'size' has 3 entries: it must be 4"},
    {"CenterCropPad negative", X("[4,4]"),
     K("s", "[2]", "[2,-1]") N("CenterCropPad", "['x','s']", ""), MP_ERR_SHAPE,
     "input 'shape'[1] = -1: must be >= 0"},
    {"Compress condition longer than the axis", X("[2,3]"),
     K("c", "[4]", "[1,0,1,1]") N("Compress", "['x','c']", "'axis':1"),
     MP_ERR_SHAPE, "input 'condition'[3] is true, past the end of axis 1 of "
                   "the input (3)"},
    {"Compress valid longer condition", X("[2,3]"),
     K("c", "[4]", "[1,0,1,0]") N("Compress", "['x','c']", "'axis':1"), MP_OK,
     NULL},
    {"Resize coordinate_transformation_mode", X("[1,1,4,4]"),
     K("z", "[4]", "[1,1,8,8]")
     N("Resize", "['x','','','z']", "'coordinate_transformation_mode':'edge'"),
     MP_ERR_SHAPE, "attribute 'coordinate_transformation_mode' = 'edge'"},
    {"Resize negative size", X("[1,1,4,4]"), K("z", "[4]", "[1,1,-8,8]")
     N("Resize", "['x','','','z']", ""), MP_ERR_SHAPE,
     "input 'sizes'[2] = -8: must be >= 0"},
    {"RMSNormalization axis", X("[2,3]") B("s", "[3]"),
     N("RMSNormalization", "['x','s']", "'axis':-3"), MP_ERR_SHAPE,
     "attribute 'axis' = -3: must be in [-2, 1]"},
    {"NegativeLogLikelihoodLoss reduction", X("[2,3]") I("t", "[2]"),
     N("NegativeLogLikelihoodLoss", "['x','t']", "'reduction':'avg'"),
     MP_ERR_SHAPE, "attribute 'reduction' = 'avg': must be 'none', 'sum' or "
                   "'mean'"},
    {"SoftmaxCrossEntropyLoss target rank", X("[2,3]") I("t", "[2,1]"),
     N("SoftmaxCrossEntropyLoss", "['x','t']", ""), MP_ERR_SHAPE,
     "target 't' has rank 2: it must be the input's rank less 1 (1)"},
    {"DequantizeLinear per-axis scale", X("[2,3]") B("s", "[4]"),
     N("DequantizeLinear", "['x','s']", "'axis':1"), MP_ERR_SHAPE,
     "scale 's' has 4 entries, axis 1 of the input 3"},
    {"QuantizeLinear axis", X("[2,3]") B("s", "[3]"),
     N("QuantizeLinear", "['x','s']", "'axis':2"), MP_ERR_SHAPE,
     "attribute 'axis' = 2: must be in [-2, 1]"},
    {"GridSample grid's last dim", X("[1,1,4,4]") B("g", "[1,5,5,3]"),
     N("GridSample", "['x','g']", ""), MP_ERR_SHAPE,
     "grid 'g' has a last dim of 3: it must be the spatial rank 2"},
    {"GridSample padding_mode", X("[1,1,4,4]") B("g", "[1,5,5,2]"),
     N("GridSample", "['x','g']", "'padding_mode':'wrap'"), MP_ERR_SHAPE,
     "attribute 'padding_mode' = 'wrap'"},
    {"DFT length 0", X("[1,8,1]"), K("l", "[]", "[0]") K("a", "[]", "[1]")
     N("DFT", "['x','l','a']", ""), MP_ERR_SHAPE,
     "input 'dft_length' = 0: must be >= 1"},
    {"Col2Im stride 0", X("[1,4,9]"),
     K("i", "[2]", "[4,4]") K("b", "[2]", "[2,2]")
     N("Col2Im", "['x','i','b']", "'strides':[1,0]"), MP_ERR_SHAPE,
     "attribute 'strides'[1] = 0: must be >= 1"},
    {"Attention heads of 3-D inputs", X("[1,4,8]") B("k", "[1,4,8]")
     B("v", "[1,4,8]"), N("Attention", "['x','k','v']", "'q_num_heads':3,"
                          "'kv_num_heads':3"), MP_ERR_SHAPE,
     "input 'x' has a hidden size of 8: not a multiple of 3 heads"},
    {"Attention ranks", X("[1,4,8]") B("k", "[1,2,4,4]") B("v", "[1,2,4,4]"),
     N("Attention", "['x','k','v']", ""), MP_ERR_SHAPE,
     "Q, K and V have ranks 3, 4 and 4"},
    {"RandomNormalLike dtype", X("[2,3]"),
     N("RandomNormalLike", "['x']", "'dtype':99"), MP_ERR_SHAPE,
     "attribute 'dtype' = 99: not a data type"},
    {"EyeLike rank", X("[2,3,4]"), N("EyeLike", "['x']", ""), MP_ERR_SHAPE,
     "input 'x' has rank 3: it must be 2"},
    {"Scan steps differ", X("[2]") B("a", "[5,2]") B("b", "[4,2]"),
     "{'name':'n','op':'Scan','inputs':['x','a','b'],'outputs':['y'],"
     "'attributes':{'num_scan_inputs':2,'body':{'graph':{'name':'body',"
     "'inputs':['s','ai','bi'],'tensors':[{'name':'s','dtype':'float32',"
     "'shape':[2]},{'name':'ai','dtype':'float32','shape':[2]},{'name':'bi',"
     "'dtype':'float32','shape':[2]}],'nodes':[{'name':'add','op':'Add',"
     "'inputs':['s','ai'],'outputs':['s2']}],'outputs':['s2']}}}}",
     MP_ERR_SHAPE, "scan input 'b' has 4 steps along axis 0, an earlier one 5"},
    {"StringNormalizer case_change_action", "{'name':'x','dtype':'string',"
     "'shape':[2],'kind':'input'}",
     N("StringNormalizer", "['x']", "'case_change_action':'TITLE'"),
     MP_ERR_SHAPE, "attribute 'case_change_action' = 'TITLE': must be "
                   "'NONE', 'LOWER' or 'UPPER'"},
    {"NonMaxSuppression center_point_box", X("[1,4,4]") B("s", "[1,1,4]"),
     N("NonMaxSuppression", "['x','s']", "'center_point_box':2"),
     MP_ERR_SHAPE, "attribute 'center_point_box' = 2: must be 0 or 1"},
    /* ---- bytes declared for an output whose shape is inferred ---- */
    {"declared bytes disagree with the inferred shape",
     X("[4]") ",{'name':'y','dtype':'float32','bytes':100}",
     N("Relu", "['x']", ""), MP_ERR_SHAPE,
     "node 'n' (op Relu): output 'y' is declared with 100 bytes, but its "
     "inferred dtype and shape give 16 bytes"},
    {"declared bytes agree with the inferred shape",
     X("[4]") ",{'name':'y','dtype':'float32','bytes':16}",
     N("Relu", "['x']", ""), MP_OK, NULL},
    /* ---- a sequence output declared as a tensor (found by fuzzing:
     * the declared shape was dropped, and the written graph no longer
     * loaded) ---- */
    {"sequence output declared a tensor",
     X("[2,3]") ",{'name':'y','dtype':'float32','shape':[2,3]}",
     N("SequenceConstruct", "['x']", ""), MP_ERR_SHAPE,
     "node 'n' (op SequenceConstruct): output 'y' is a sequence, but the "
     "graph declares it a tensor of rank 2; leave out its shape"},
    {"sequence output declared with a dtype only",
     X("[2,3]") ",{'name':'y','dtype':'float32'}",
     N("SequenceConstruct", "['x']", ""), MP_OK, NULL},
    {"Unsqueeze to rank 17", X("[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]"),
     N("Unsqueeze", "['x']", "'axes':[0]"), MP_ERR_BAD_DIM,
     "rank 17 above 16"},
};

/* the graph of a case: one document, its single quotes made double */
static char *case_doc(const check_case *c)
{
    size_t cap = strlen(c->tensors) + strlen(c->nodes) + 128;
    char *s = malloc(cap);
    snprintf(s, cap, "{'name':'t','tensors':[%s],'nodes':[%s],'outputs':['y']}",
             c->tensors, c->nodes);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    return s;
}

static void test_table(void)
{
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const check_case *c = &cases[i];
        char *doc = case_doc(c);
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_json_string(ctx, doc, "c.json", &g);
        const char *msg = mp_ctx_message(ctx);
        bool ok = st == c->st && (c->frag ? strstr(msg, c->frag) != NULL
                                          : g != NULL);
        if (!ok) {
            printf("\n  %s: status %d (expected %d): %s\n  %s", c->what,
                   (int)st, (int)c->st, msg, doc);
            bad++;
        }
        CU_ASSERT(ok);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
        free(doc);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Through the command: a bad attribute is an input error (exit 3), window
 * arithmetic that overflows a size error (exit 12); the message names the
 * file, node, attribute and value. */
static void test_exit_codes(void)
{
    static const struct {
        const char *what; /* the case */
        int rc;
    } runs[] = {{"Conv negative pad", 3},
                {"Conv pads overflow", 12},
                {"Conv kernel larger than the padded input", 3},
                {"MaxPool kernel 0", 3},
                {"Split sizes do not sum to the dim", 3},
                {"Gather index above the dim", 3},
                {"Unsqueeze to rank 17", 11}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        const check_case *c = NULL;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !c; i++)
            if (strcmp(cases[i].what, runs[k].what) == 0)
                c = &cases[i];
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        char *doc = case_doc(c);
        const char *path = mp_test_write_temp(".json", doc);
        CU_ASSERT_PTR_NOT_NULL_FATAL(path);
        char p[512], cmd[1024], out[4096];
        snprintf(p, sizeof p, "%s", path);
        snprintf(cmd, sizeof cmd, "'%s' plan '%s' 2>&1 >/dev/null",
                 MP_CLI_PATH, p);
        int rc = mp_test_run(cmd, out, sizeof out);
        CU_ASSERT_EQUAL(rc, runs[k].rc);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, c->frag));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, p));
        if (rc != runs[k].rc || !strstr(out, c->frag))
            printf("\n  %s: exit %d: %s", c->what, rc, out);
        remove(p);
        free(doc);
    }
}

#ifdef MP_WITH_ONNX
#include "onnx_build.h"

static void ob_attr_ints(ob *b, Onnx__NodeProto *n, const char *name,
                         int64_t *v, size_t cnt)
{
    Onnx__AttributeProto *a =
        ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->ints = v;
    a->n_ints = cnt;
}

/* The same checks reached through the ONNX loader: x [1,3,8,8] into a
 * Conv (weight w [4,3,3,3]) or a MaxPool with one ints attribute. */
static void test_onnx(void)
{
    static const int64_t xd[] = {1, 3, 8, 8}, wd[] = {4, 3, 3, 3};
    static int64_t neg[] = {0, 0, -1, 0}, big[] = {1LL << 62, 0, 1LL << 62, 0},
                   zero[] = {0, 0};
    static const struct {
        const char *op, *attr;
        int64_t *v;
        size_t n;
        mp_status st;
        const char *frag;
    } runs[] = {
        {"Conv", "pads", neg, 4, MP_ERR_SHAPE,
         "node 'n' (op Conv): attribute 'pads'[2] = -1: must be >= 0"},
        {"Conv", "pads", big, 4, MP_ERR_OVERFLOW,
         "spatial dim 0: input 8 with pads 4611686018427387904"},
        {"MaxPool", "kernel_shape", zero, 2, MP_ERR_SHAPE,
         "node 'n' (op MaxPool): attribute 'kernel_shape'[0] = 0: must be "
         ">= 1"},
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        ob b;
        ob_init(&b, 8, 17);
        ob_input(&b, "x", 1, 4, xd);
        Onnx__NodeProto *n;
        if (strcmp(runs[k].op, "Conv") == 0) {
            ob_init_tensor(&b, "w", 4, wd);
            n = ob_node(&b, "Conv", "n", "x", "w", "y");
        } else {
            n = ob_node(&b, "MaxPool", "n", "x", NULL, "y");
        }
        ob_attr_ints(&b, n, runs[k].attr, runs[k].v, runs[k].n);
        ob_output(&b, "y", 1, -1, NULL);
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        mp_status st = ob_load_values(&b, ctx, NULL, 0, &g);
        const char *msg = mp_ctx_message(ctx);
        if (st != runs[k].st || !strstr(msg, runs[k].frag))
            printf("\n  ONNX %s %s: %s\n", runs[k].op, runs[k].attr, msg);
        CU_ASSERT_EQUAL(st, runs[k].st);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, runs[k].frag));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "t.onnx"));
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
        ob_free(&b);
    }
}
#endif

void mp_register_shape_checks(void)
{
    static CU_TestInfo tests[] = {
        {"every rejected attribute or input, one case each", test_table},
        {"exit codes and messages through the command", test_exit_codes},
#ifdef MP_WITH_ONNX
        {"the checks through the ONNX loader", test_onnx},
#endif
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("shape_checks", tests);
}
