import time, sys
from sklearnex import patch_sklearn; patch_sklearn()
from sklearn.svm import SVC
from sklearn.datasets import load_svmlight_file
for tr, te, g in [("/tmp/d784/strain","/tmp/d784/stest",0.010088),("/tmp/d784/train","/tmp/d784/test",0.00252559)]:
    X,y = load_svmlight_file(tr, n_features=784); Xt,yt = load_svmlight_file(te, n_features=784)
    X=X.toarray(); Xt=Xt.toarray()
    for r in range(2):
        m=SVC(C=10, gamma=g); t=time.time(); m.fit(X,y); ft=time.time()-t
        t=time.time(); acc=(m.predict(Xt)==yt).mean(); pt=time.time()-t
        print(tr, "fit %.2f predict %.2f acc %.2f"%(ft,pt,100*acc), flush=True)
