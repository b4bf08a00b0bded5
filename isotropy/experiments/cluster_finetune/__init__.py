"""Fine-tuning with the in-batch cluster-based isotropy transform (Rajaee & Pilehvar): ``isotropy run cluster-finetune``."""
