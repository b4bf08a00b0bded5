"""A few Lightning training steps of a tiny random BERT with LightningGeometryCallback (run as a script by the tests).

``python _lightning_geometry_run.py OUT_DIR DEVICES`` trains 4 steps on the CPU (``ddp`` with gloo
when DEVICES > 1), logs geometry every 2 steps to OUT_DIR/csv/.../metrics.csv, and saves the final
weights (rank 0) to OUT_DIR/final.pt with the probe to OUT_DIR/probe.pt.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import lightning as L
import torch


def probe_inputs():
    g = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, 19, (11, 7), generator=g)
    lengths = torch.tensor([7, 5, 6, 3, 7, 4, 7, 2, 5, 6, 7])
    attention_mask = (torch.arange(7)[None, :] < lengths[:, None]).long()
    return {"input_ids": input_ids * attention_mask, "attention_mask": attention_mask}


def tiny_bert():
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=19, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=2)
    return BertForSequenceClassification(config).double()  # float64: rank shares and one process agree to 1e-10


class Module(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = tiny_bert()

    def training_step(self, batch, batch_idx):
        return self.model(**batch).loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


class SaveFinal(L.Callback):
    def __init__(self, path):
        self.path = path

    def on_train_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            torch.save(pl_module.model.state_dict(), self.path)


def main(out_dir: Path, devices: int):
    from lightning.pytorch.loggers import CSVLogger

    from isotropy.training import LightningGeometryCallback

    g = torch.Generator().manual_seed(2)
    data = [{"input_ids": torch.randint(5, 19, (7,), generator=g), "attention_mask": torch.ones(7, dtype=torch.long),
             "labels": torch.tensor(i % 2)} for i in range(32)]
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    probe = probe_inputs()
    torch.save(probe, out_dir / "probe.pt")
    callback = LightningGeometryCallback(probe, every_n_steps=2, model="model", pooling="mean",
                                         metrics=("isoscore", "isoscore_star", "cosine_similarity_mean", "rogue_dimension_share", "twonn_dimension"))
    trainer = L.Trainer(accelerator="cpu", devices=devices, strategy="ddp" if devices > 1 else "auto",
                        max_steps=4, logger=CSVLogger(out_dir / "csv", name="run"), callbacks=[callback, SaveFinal(out_dir / "final.pt")],
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        log_every_n_steps=1, deterministic=True)
    trainer.fit(Module(), loader)


def end_process():
    """End a rank of these scripts once its outputs are written, without tearing gloo down at interpreter exit.

    The trainers leave gloo's process group up. Left to the interpreter's exit, gloo's threads abort a rank
    ("terminate called without an active exception") about once in 25 runs under load, and destroying the
    group first, on its own, still aborted once in a clean-clone CI (the files were all written). So every rank
    waits for the others (no rank closes its sockets while another still talks), destroys the group, flushes
    and leaves with ``os._exit(0)``: no interpreter or C++ static teardown runs after the group is gone.
    """
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(Path(sys.argv[1]), int(sys.argv[2]))
    end_process()
