import numpy as np, sys
from sklearn.datasets import load_svmlight_file, dump_svmlight_file
from scipy.ndimage import zoom
for part in ["train","test"]:
    X,y = load_svmlight_file(f"target/peers-data/usps/{part}", n_features=256)
    X = ((X.toarray()+1)/2).reshape(-1,16,16)
    Z = np.stack([zoom(im, 28/16, order=1) for im in X]).reshape(-1,784)
    Z = np.where(Z < 0.02, 0, np.clip(Z, 0, 1)).astype(np.float32)
    dump_svmlight_file(Z, y, f"/tmp/d784/s{part}", zero_based=False)
    print(part, Z.shape, (Z!=0).mean())
X = Z
