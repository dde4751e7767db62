from setuptools import find_packages, setup

with open("README.md", encoding="utf-8") as f:
    long_description = f.read()

setup(
    name="syntax-nmt",
    version="0.1.0",
    description="fairseq plugin for syntax-infused neural machine translation: source feature embeddings, "
    "SG-Net, syntax-aware local attention, Syntax-BERT, SEPREM and LISA's parent head in one Transformer encoder",
    long_description=long_description,
    long_description_content_type="text/markdown",
    packages=find_packages(include=["syntax_nmt", "syntax_nmt.*"]),
    package_data={"syntax_nmt.synthetic": ["*.md"]},
    python_requires=">=3.8",
    install_requires=[
        "torch",
        'fairseq==0.12.2; python_version < "3.11"',
        'fairseq-fixed==0.12.3.1; python_version >= "3.11"',
        "spacy>=3.7",
        "sentencepiece",
        "subword-nmt",
        # evaluation/significance.py reads sacreBLEU's sentence statistics through two private methods (no public API
        # gives them, see there): the versions it was checked with
        "sacrebleu>=2.0,<2.7",
        "tabulate",
        "sacremoses",
        "tqdm",
        "numpy",
        "matplotlib",
    ],
    extras_require={
        "dev": ["pytest", "pytest-xdist", "hypothesis", "mutmut>=3.8,<4"],
        # serving an exported model with CTranslate2 (syntax-nmt-export --ctranslate2; docs/deploy.md)
        "deploy": ["ctranslate2>=4.5"],
    },
    entry_points={
        "console_scripts": [
            "syntax-nmt-synth = syntax_nmt.synthetic.cli:cli_main",
            "syntax-nmt-train-spacy = syntax_nmt.annotate.spacy_train:cli_main",
            "syntax-nmt-annotate = syntax_nmt.annotate.cli:cli_main",
            "syntax-nmt-binarize = syntax_nmt.data.binarize:cli_main",
            "syntax-nmt-target-tags = syntax_nmt.annotate.target_tags:cli_main",
            "syntax-nmt-evaluate = syntax_nmt.evaluation.evaluate:cli_main",
            "syntax-nmt-analyze = syntax_nmt.analyze.cli:cli_main",
            "syntax-nmt-export = syntax_nmt.export.cli:cli_main",
        ]
    },
)
