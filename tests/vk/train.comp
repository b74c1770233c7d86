#version 450
// One step of a training-loop-like chain (vk_bench train): the new weights from the previous
// step's and this step's slice of the input batch: w_out[i] = w_in[i] * 2654435761 +
// x[pc.slice * pc.xn + i % pc.xn] + pc.slice, over pc.n weights.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { uint v[]; } x;
layout(set = 0, binding = 1) readonly buffer WIn { uint v[]; } w_in;
layout(set = 0, binding = 2) writeonly buffer WOut { uint v[]; } w_out;
layout(push_constant) uniform PC { uint slice; uint xn; uint n; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n)
        w_out.v[i] = w_in.v[i] * 2654435761u + x.v[pc.slice * pc.xn + i % pc.xn] + pc.slice;
}
