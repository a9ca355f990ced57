#!/usr/bin/env python3
"""A lane-level model of the mma.sync backward's main kernel
(lib/Kernels/mma_attention_bwd.c), checked against a direct backward.

It replays one query head's CTAs with the kernel's own shared-memory
layout (16-byte chunks XORed with row % 8), the lanes' ldmatrix addresses
(.trans or not), the mma.sync.m16n8k16 fragment layouts, P and dS packed
from the accumulators, the dS^T stores and the dQ split between warps, in
float64, and prints the largest errors of dV, dK and dQ (about 1e-15 when
the indexing is right; a wrong lane or chunk gives errors of the size of
the gradients). It models the address algebra, not the generated IR: a
change to the kernel's fragments or layout should be made here too.

  python3 scripts/mma_bwd_model.py                  (the sweep below)
  python3 scripts/mma_bwd_model.py SEQ_K CAUSAL D KEYS
"""
import math
import random
import subprocess
import sys

if len(sys.argv) == 1:
    bad = 0
    for args in ["64 1 64 64", "100 0 64 64", "100 1 128 64", "130 1 64 64",
                 "100 0 64 128", "100 1 128 128", "200 1 64 128",
                 "130 0 128 128"]:
        out = subprocess.run([sys.executable, __file__] + args.split(),
                             capture_output=True, text=True).stdout
        errs = [float(x) for x in out.split()[2::3]]
        ok = max(errs) < 1e-12
        bad += not ok
        print(f"seq_k, causal, d, keys = {args}: {out.splitlines()[0]} "
              f"{'ok' if ok else 'WRONG'}")
    sys.exit(1 if bad else 0)

SEQ_K = int(sys.argv[1])
CAUSAL = sys.argv[2] == "1"
D = int(sys.argv[3])
KEYS = int(sys.argv[4])
SEQ_Q = 100  # two query blocks, the second ragged
ROWS = 64
RB = D * 2
DS_RB = ROWS * 2
scale = 0.125
LOG2E = 1.4426950408889634
random.seed(1)

def rnd(n, m):
    return [[random.uniform(-1, 1) for _ in range(m)] for _ in range(n)]

Q, K, V, dO = rnd(SEQ_Q, D), rnd(SEQ_K, D), rnd(SEQ_K, D), rnd(SEQ_Q, D)

# reference forward and backward (float)
def visible(i, j):
    return j < SEQ_K and (not CAUSAL or j <= i)
S = [[sum(Q[i][c] * K[j][c] for c in range(D)) for j in range(SEQ_K)] for i in range(SEQ_Q)]
lse = []
P = []
for i in range(SEQ_Q):
    xs = [S[i][j] * scale for j in range(SEQ_K) if visible(i, j)]
    m = max(xs)
    l = sum(math.exp(x - m) for x in xs)
    lse.append(m + math.log(l))
    P.append([math.exp(S[i][j] * scale - lse[i]) if visible(i, j) else 0.0 for j in range(SEQ_K)])
O = [[sum(P[i][j] * V[j][c] for j in range(SEQ_K)) for c in range(D)] for i in range(SEQ_Q)]
Dr = [sum(dO[i][c] * O[i][c] for c in range(D)) for i in range(SEQ_Q)]
dP = [[sum(dO[i][c] * V[j][c] for c in range(D)) for j in range(SEQ_K)] for i in range(SEQ_Q)]
dS = [[P[i][j] * (dP[i][j] - Dr[i]) for j in range(SEQ_K)] for i in range(SEQ_Q)]
ref_dV = [[sum(P[i][j] * dO[i][c] for i in range(SEQ_Q)) for c in range(D)] for j in range(SEQ_K)]
ref_dK = [[scale * sum(dS[i][j] * Q[i][c] for i in range(SEQ_Q)) for c in range(D)] for j in range(SEQ_K)]
ref_dQ = [[scale * sum(dS[i][j] * K[j][c] for j in range(SEQ_K)) for c in range(D)] for i in range(SEQ_Q)]

# ---- shared memory: element-addressed (byte offsets / 2) -------------------
NP = (SEQ_Q + 63) // 64 * 64
smem = {}
def swz(rb, row, chunk):
    return row * rb + ((chunk ^ (row & 7)) * 16)
def store_tile(off, rows, row0, seq, n=64):
    for r in range(n):
        g = row0 + r
        for c in range(D):
            v = rows[g][c] if g < seq else 0.0
            smem[off + swz(RB, r, c // 8) + (c % 8) * 2] = v
def ld16(addr):  # 8 elements at a 16-byte address
    return [smem.get(addr + 2 * e, None) for e in range(8)]

def ldmatrix(addrs, trans):
    regs = [[None] * 4 for _ in range(32)]
    for mi in range(4):
        M = [ld16(addrs[8 * mi + r]) for r in range(8)]
        for l in range(32):
            g, t = l // 4, l % 4
            regs[l][mi] = (M[2 * t][g], M[2 * t + 1][g]) if trans else (M[g][2 * t], M[g][2 * t + 1])
    return regs

def mma(C, A, B0, B1):
    # C[l]: 4 floats; A[l]: 4 pairs; B0[l], B1[l]: pairs
    Am = [[0.0] * 16 for _ in range(16)]
    Bm = [[0.0] * 8 for _ in range(16)]
    for l in range(32):
        g, t = l // 4, l % 4
        a = A[l]
        Am[g][2*t], Am[g][2*t+1] = a[0]
        Am[g+8][2*t], Am[g+8][2*t+1] = a[1]
        Am[g][2*t+8], Am[g][2*t+9] = a[2]
        Am[g+8][2*t+8], Am[g+8][2*t+9] = a[3]
        Bm[2*t][g], Bm[2*t+1][g] = B0[l]
        Bm[2*t+8][g], Bm[2*t+9][g] = B1[l]
    for l in range(32):
        g, t = l // 4, l % 4
        for e in range(4):
            r = g + 8 * (e // 2); c = 2 * t + e % 2
            C[l][e] += sum(Am[r][k] * Bm[k][c] for k in range(16))

def frag_r(i): return 8 * ((i // 2) % 2)
def frag_c(i): return 8 * (i // 4) + (i % 2)

lanes = range(32)
g4 = [l // 4 for l in lanes]; t4 = [l % 4 for l in lanes]; x7 = [l & 7 for l in lanes]
frag_hi = [l // 16 for l in lanes]; klo = [(l // 8) & 1 for l in lanes]
frag_row = [klo[l] * 8 + x7[l] for l in lanes]; krow = [frag_hi[l] * 8 + x7[l] for l in lanes]

k_off, v_off = 0, KEYS * RB
ds_off = 2 * KEYS * RB
st = ds_off + KEYS * DS_RB
do_off = ROWS * RB
dq_acc = [[0.0] * D for _ in range(NP)]
got_dV = [[0.0] * D for _ in range(SEQ_K)]
got_dK = [[0.0] * D for _ in range(SEQ_K)]
for kb in range((SEQ_K + KEYS - 1) // KEYS):
    smem.clear()
    store_tile(k_off, K, kb * KEYS, SEQ_K, KEYS)
    store_tile(v_off, V, kb * KEYS, SEQ_K, KEYS)
    dv = [[[0.0] * (D // 2) for _ in lanes] for w in range(KEYS // 16)]
    dk = [[[0.0] * (D // 2) for _ in lanes] for w in range(KEYS // 16)]
    lse2 = [lse[i] * LOG2E if i < SEQ_Q else math.inf for i in range(NP)]
    Dw = [Dr[i] if i < SEQ_Q else 0.0 for i in range(NP)]

    def product_t(w, at, bt):
        acc = [[0.0] * 32 for _ in lanes]
        for kk in range(D // 16):
            A = ldmatrix([at + (16 * w + frag_row[l]) * RB + ((frag_hi[l] + 2 * kk) ^ x7[l]) * 16 for l in lanes], False)
            for pp in range(ROWS // 16):
                Bf = ldmatrix([bt + krow[l] * RB + ((klo[l] + 2 * kk) ^ x7[l]) * 16 + 16 * pp * RB for l in lanes], False)
                c0 = [acc[l][8*pp:8*pp+4] for l in lanes]; c1 = [acc[l][8*pp+4:8*pp+8] for l in lanes]
                mma(c0, A, [Bf[l][0] for l in lanes], [Bf[l][1] for l in lanes])
                mma(c1, A, [Bf[l][2] for l in lanes], [Bf[l][3] for l in lanes])
                for l in lanes:
                    acc[l][8*pp:8*pp+4] = c0[l]; acc[l][8*pp+4:8*pp+8] = c1[l]
        return acc

    def product_acc(a, bt, acc):
        for dp in range(D // 16):
            for kc in range(ROWS // 16):
                vb = ldmatrix([bt + frag_row[l] * RB + ((frag_hi[l] + 2 * dp) ^ x7[l]) * 16 + 16 * kc * RB for l in lanes], True)
                A = [a[l][4*kc:4*kc+4] for l in lanes]
                c0 = [acc[l][8*dp:8*dp+4] for l in lanes]; c1 = [acc[l][8*dp+4:8*dp+8] for l in lanes]
                mma(c0, A, [vb[l][0] for l in lanes], [vb[l][1] for l in lanes])
                mma(c1, A, [vb[l][2] for l in lanes], [vb[l][3] for l in lanes])
                for l in lanes:
                    acc[l][8*dp:8*dp+4] = c0[l]; acc[l][8*dp+4:8*dp+8] = c1[l]

    qlo = (kb * KEYS) // ROWS if CAUSAL else 0
    for qb in range(qlo, NP // ROWS):
        q0 = qb * ROWS
        store_tile(st, Q, q0, SEQ_Q)
        store_tile(st + do_off, dO, q0, SEQ_Q)
        pps, dsps = [], []
        for w in range(KEYS // 16):
            kr0 = kb * KEYS + 16 * w
            sv = product_t(w, k_off, st)
            p = [[0.0] * 32 for _ in lanes]
            for l in lanes:
                for i in range(32):
                    col = 2 * t4[l] + frag_c(i)
                    p[l][i] = 2 ** (sv[l][i] * scale * LOG2E - lse2[q0 + col])
            need = (CAUSAL and kr0 + 15 > q0) or (SEQ_K % KEYS and kr0 + 16 > SEQ_K)
            if need:
                for l in lanes:
                    for i in range(32):
                        kv = kr0 + g4[l] + frag_r(i); q = q0 + 2 * t4[l] + frag_c(i)
                        if kv >= SEQ_K or (CAUSAL and kv > q):
                            p[l][i] = 0.0
            pv = product_t(w, v_off, st + do_off)
            pp = [[(p[l][2*i], p[l][2*i+1]) for i in range(16)] for l in lanes]
            dsp = [[(p[l][2*i] * (pv[l][2*i] - Dw[q0 + 2*t4[l] + frag_c(2*i)]),
                     p[l][2*i+1] * (pv[l][2*i+1] - Dw[q0 + 2*t4[l] + frag_c(2*i+1)])) for i in range(16)] for l in lanes]
            for l in lanes:
                for i in range(16):
                    row = 16 * w + g4[l] + 8 * (i % 2)
                    off = ds_off + swz(DS_RB, row, i // 2) + 4 * t4[l]
                    smem[off], smem[off + 2] = dsp[l][i]
            product_acc(pp, st + do_off, dv[w])
            product_acc(dsp, st, dk[w])
        # barrier; dQ
        WARPS = KEYS // 16
        cols = D * 4 // WARPS
        width = min(cols, 64); nchunks = cols // width; ndp = width // 16
        for w in range(WARPS):
            wr = w % 4; col0 = (w // 4) * cols
            for c in range(nchunks):
                qa = [[0.0] * (8 * ndp) for _ in lanes]
                for kc in range(KEYS // 16):
                    af = ldmatrix([ds_off + krow[l] * DS_RB + 16 * kc * DS_RB + ((2 * wr + klo[l]) ^ x7[l]) * 16 for l in lanes], True)
                    for dp in range(ndp):
                        vb = ldmatrix([k_off + frag_row[l] * RB + (((col0 // 8 + frag_hi[l]) + 2 * (width // 16 * c + dp)) ^ x7[l]) * 16 + 16 * kc * RB for l in lanes], True)
                        c0 = [qa[l][8*dp:8*dp+4] for l in lanes]; c1 = [qa[l][8*dp+4:8*dp+8] for l in lanes]
                        mma(c0, af, [vb[l][0] for l in lanes], [vb[l][1] for l in lanes])
                        mma(c1, af, [vb[l][2] for l in lanes], [vb[l][3] for l in lanes])
                        for l in lanes:
                            qa[l][8*dp:8*dp+4] = c0[l]; qa[l][8*dp+4:8*dp+8] = c1[l]
                for l in lanes:
                    row = q0 + 16 * wr + g4[l]
                    for i in range(8 * ndp):
                        dq_acc[row + frag_r(i)][col0 + 2 * t4[l] + width * c + frag_c(i)] += qa[l][i]


    for w in range(KEYS // 16):
        for l in lanes:
            for r in range(2):
                kv = kb * KEYS + 16 * w + g4[l] + 8 * r
                if kv >= SEQ_K: continue
                for j in range(D // 8):
                    i = 4 * j + 2 * r
                    col = 8 * j + 2 * t4[l]
                    got_dV[kv][col], got_dV[kv][col + 1] = dv[w][l][i], dv[w][l][i + 1]
                    got_dK[kv][col], got_dK[kv][col + 1] = scale * dk[w][l][i], scale * dk[w][l][i + 1]

def err(a, b):
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
got_dQ = [[scale * x for x in dq_acc[i]] for i in range(SEQ_Q)]
print("dV err", err(got_dV, ref_dV), "dK err", err(got_dK, ref_dK), "dQ err", err(got_dQ, ref_dQ))
