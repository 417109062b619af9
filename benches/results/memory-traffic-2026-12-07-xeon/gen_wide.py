import numpy as np, sys
def gen(path, m, d, seed, noise=0.02):
    r = np.random.default_rng(seed)
    X = r.standard_normal((m, d)).astype(np.float32)
    w = r.standard_normal(d); w2 = r.standard_normal(d)
    s = X @ w / np.sqrt(d) + 0.5*np.sin(X @ w2 / np.sqrt(d) * 2)
    y = np.where(s > 0, 1, -1)
    flip = r.random(m) < noise
    y[flip] = -y[flip]
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    with open(path, 'w') as f:
        for i in range(m):
            f.write(str(y[i]) + ' ' + ' '.join(f'{j+1}:{X[i,j]:.4g}' for j in range(d)) + '\n')
gen('target/x/w64', 60000, 64, 1)
gen('target/x/w128', 40000, 128, 2)
gen('target/x/w256', 40000, 256, 3)
