"""Input checks of the training integration (probe, regularisers, torchmetrics wrappers): one-line errors that name
the argument, the value given and what is expected, raised where the mistake is made."""

import pytest

from isotropy import IsotropyValueError


def test_regulariser_method_suggests_the_closest_name():
    """HFRegulariser("isstar") listed the methods without the did-you-mean every other name of the toolkit gets."""
    from isotropy.training import HFRegulariser, HiddenStateRegulariser

    with pytest.raises(IsotropyValueError) as info:
        HFRegulariser("isstar")
    assert str(info.value) == ("The 'method' parameter of HFRegulariser must be one of {'istar', 'cosreg'}. "
                               "Got 'isstar' instead. Did you mean 'istar'?")
    with pytest.raises(IsotropyValueError) as info:
        HiddenStateRegulariser("zzz")
    assert str(info.value) == ("The 'method' parameter of HiddenStateRegulariser must be one of {'istar', 'cosreg'}. "
                               "Got 'zzz' instead.")
