#!/usr/bin/env python3
"""Train LIBSVM's C-SVC (libsvm-official) and predict a test file with it.

usage: libsvm_train.py TRAIN TEST C GAMMA EPS MODEL_OUT LABELS_OUT
TRAIN and TEST are plain LIBSVM text. Writes LIBSVM's model and one predicted label per line.
"""
import sys

from libsvm.svmutil import svm_predict, svm_read_problem, svm_save_model, svm_train


def main():
    train, test, c, gamma, eps, model_out, labels_out = sys.argv[1:8]
    y, x = svm_read_problem(train)
    model = svm_train(y, x, f"-s 0 -t 2 -c {c} -g {gamma} -e {eps} -m 200 -q")
    svm_save_model(model_out, model)
    ty, tx = svm_read_problem(test)
    labels, _, _ = svm_predict(ty, tx, model, "-q")
    with open(labels_out, "w") as f:
        for v in labels:
            f.write(f"{v:g}\n")


if __name__ == "__main__":
    main()
