#!/usr/bin/env python3
"""Train LIBSVM's C-SVC (libsvm-official) and predict a test file with it.

usage: libsvm_train.py TRAIN TEST C GAMMA EPS MODEL_OUT LABELS_OUT [EXTRA [DEC_OUT]]
TRAIN and TEST are plain LIBSVM text. Writes LIBSVM's model and one predicted label per line;
EXTRA adds svm-train options (class weights: "-w1 4 -w-1 1"), DEC_OUT gets the label and the
decision value of each test row.
"""
import sys

from libsvm.svmutil import svm_predict, svm_read_problem, svm_save_model, svm_train


def main():
    train, test, c, gamma, eps, model_out, labels_out = sys.argv[1:8]
    extra = sys.argv[8] if len(sys.argv) > 8 else ""
    y, x = svm_read_problem(train)
    model = svm_train(y, x, f"-s 0 -t 2 -c {c} -g {gamma} -e {eps} -m 200 -q {extra}")
    svm_save_model(model_out, model)
    ty, tx = svm_read_problem(test)
    labels, _, dec = svm_predict(ty, tx, model, "-q")
    with open(labels_out, "w") as f:
        for v in labels:
            f.write(f"{v:g}\n")
    if len(sys.argv) > 9:
        with open(sys.argv[9], "w") as f:
            for v, d in zip(labels, dec):
                f.write(f"{v:g} " + " ".join(repr(t) for t in d) + "\n")


if __name__ == "__main__":
    main()
