"""A few Hugging Face Trainer steps of a tiny random BERT with HFGeometryCallback (run as a script by the tests).

``torchrun --nproc_per_node N _hf_geometry_run.py OUT_DIR`` (or plain ``python`` for one process)
trains 4 steps on the CPU (DDP over gloo when N > 1) with geometry logged every 2 steps, then rank 0
writes the Trainer's ``log_history`` to OUT_DIR/log_history.json and the final weights to
OUT_DIR/final.pt. The model and probe are those of ``_lightning_geometry_run`` (float64, so the
per-rank shares and one process agree to 1e-10).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lightning_geometry_run import end_process, probe_inputs, tiny_bert


def main(out_dir: Path):
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFGeometryCallback

    g = torch.Generator().manual_seed(2)
    data = [{"input_ids": torch.randint(5, 19, (7,), generator=g), "attention_mask": torch.ones(7, dtype=torch.long),
             "labels": torch.tensor(i % 2)} for i in range(32)]
    callback = HFGeometryCallback(probe_inputs(), every_n_steps=2, pooling="mean",
                                  metrics=("isoscore", "isoscore_star", "cosine_similarity_mean", "rogue_dimension_share", "twonn_dimension"))
    args = TrainingArguments(output_dir=str(out_dir / "out"), per_device_train_batch_size=4, max_steps=4,
                             learning_rate=0.5, optim="sgd", lr_scheduler_type="constant", logging_steps=1,
                             save_strategy="no", report_to=[], use_cpu=True, seed=0, disable_tqdm=True,
                             ddp_backend="gloo", dataloader_num_workers=0)
    trainer = Trainer(model=tiny_bert(), args=args, train_dataset=data, callbacks=[callback])
    trainer.train()
    if trainer.is_world_process_zero():
        (out_dir / "log_history.json").write_text(json.dumps(trainer.state.log_history))
        torch.save(trainer.model.state_dict(), out_dir / "final.pt")
    (out_dir / f"history_rank{trainer.args.process_index}.json").write_text(json.dumps(callback.history))


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(Path(sys.argv[1]))
    end_process()
