"""Your own numbers for the written questions of a2 (RNNs and BPTT).

Run `python variant.py YOUR_KEY` and answer the written questions with the numbers it
prints. YOUR_KEY is your variant key: the email address of your Gradescope account (spaces
and capitals do not matter), unless your instructor says the course uses your student
id (SID). Gradescope's feedback names the key your numbers were computed for.
Without a key you get the default variant (the one the solution's answers.toml uses).
Needs only Python and numpy.

The grader runs this same file to recompute your numbers, so do not edit it.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np

# The slides' two-unit microscope ("Small numbers make the forward pass visible").
_X_MIC = np.array([[1.0, -0.5], [0.2, 0.8], [-0.4, 0.3]])
_W_X_MIC = np.array([[0.3, -0.2], [0.1, 0.4]])
_W_H_MIC = np.array([[0.5, 0.1], [-0.2, 0.3]])
_B_H_MIC = np.array([0.05, -0.10])
_Y_MIC = np.array([0.20, -0.15])


def seed_for(student: str | None) -> int:
    """0 without an id; otherwise the first 8 hex digits of sha256 of the normalised id."""
    if not student or not student.strip():
        return 0
    return int(hashlib.sha256(student.strip().lower().encode()).hexdigest()[:8], 16)


def _steps(rng: np.random.Generator, shape: tuple[int, ...], low: int, high: int, step: float) -> np.ndarray:
    """Random multiples of `step` in [low*step, high*step]: short decimals you can type."""
    return np.round(rng.integers(low, high + 1, size=shape) * step, 2) + 0.0  # no -0.0


# Perturbations of the microscope, one letter per number ("a" = -6 ... "g" = 0 ... "m" = +6):
# 6 for X (tenths, added to 2 X), 4 for W_x and 4 for W_h (tenths), 2 for b_h (twentieths),
# 2 for y (tenths). Each was screened (with the course's reference code) so that z_t is far
# from 0, G_1 is not small, and every common mistake gives a clearly different G_1.
_DIGITS = "abcdefghijklm"
_POOL = (
    "dfefdjgeehfghhhejk", "gjgjjdhhiejhefffmc", "jifdgiieheghdgfeka", "ieijjfihiijifjigbm", "ihjdifhhifeijjiiag",
    "ghfjfhggfhijhfghgi", "ehggjfgehijghhffcg", "ghheejehgigijfeihm", "gjdffeifigejeheeel", "jijfigiiifjihhhfcg",
    "jgfhijeghheigihgbj", "hegdejiegehigeheee", "jfdgidfigfjjfihhbi", "ihifhiggiihhhjhihm", "dhgheiiihegjhifhga",
    "fegffdffihgighggjg", "hdjfhdhiihiijiefel", "hhggijeighdjjfgedg", "dgdgejghfijejeiicl", "gfiediieghdifgfelm",
    "digffihffffjegheje", "dehjfdfehhfhjefijl", "djdjddiefigdjjefjd", "ggjddjifiheddjhgcl", "jhedefhieejejhhgce",
    "gdgjhdigigejehfhlm", "jiggfhighggghgihfl", "fjeejjighffejhghkc", "dejdfehifffeeehhdj", "fehhjhghehjjgfhiaj",
    "fgfdjhgefgiheiegjb", "iijhfhhffefifigglj", "ehefdjeffigediiile", "ejgjefggfiejffehmm", "jfdedjhegiggefiggl",
    "deeghjfhihgdjgeegd", "efhidjigegfghjfhdf", "fhgfdfehiihihegikj", "fghjiheghfijjgiikj", "ifehfhiehhighgehca",
    "ifgjjhefeggififhla", "fjhgieieiiieefegim", "fifjefeeeedjgjffki", "ffeffdgigihefiigll", "dfjijhhiiiiijeiihf",
    "hihhhjfegejgdgegmd", "efjhfhhigffjdggije", "hjeehieeehjjfjgifj", "jhhghdgeigdghhhemm", "hfihhjhheifihhiiai",
    "fhdhfifggiegejffab", "hijdghhiggjhdgggbh", "effjfeegihhidffhjg", "egggidhiiidifjiide", "hfgifjgfgigegfgfkh",
    "edhjheefighddffidf", "jfgiejhfifdgfigehh", "idfhejgegghifieeek", "iddgjffefifjhfihhm", "gfjedgeeeidiegfgfb",
    "jfjiegighhdihgiehl", "gfhjdeheeffjfigflj", "hehjeihihgjjhiggch", "iihegjffihdjhfifmc", "hffdggeeehfjhhhhha",
    "jigigihiheiedfghif", "jdjgfhhheghijfhiie", "ddfjhheeegdhdheimc", "jhjejeihgijhejfikj", "hjhefdghegjhgjhfcd",
    "idfgjgeeeihgeifflm", "egdjehihhheejigfkb", "gigjdehehijifjeggb", "hjhffghigeihdeifmk", "jehighgeefejefgghm",
    "iejejihfehdjdieghl", "eggiggighidhfeehha", "jgfijhfghidjeeiech", "iejeffggihfifheihh", "ggdhhjiehfegejegmj",
    "hijfdgeihijjjfefmj", "fgedfjgegiggehiigf", "hfhhjgfgiigejiihbi", "gdefdeeefggjdifeed", "idgddgifhehghhhgla",
    "dggedgeeegijegfimj", "geheiifeiiiijgfghl", "fgggjhghgifefhghij", "ffhgjdhggfihejhhci", "gjdeeihfhfgddjfefh",
    "heejjdeffegidhefma", "ggiiffefiggejjfgfc", "jjgjidgieiejjffgch", "ejdfdifffihejgifdd", "jfgigeffhgfjjjefhc",
    "fhhjhdggihhgehigmh", "hiiijihfeidhhjhgdh", "jhfihjhfghhejjfgbj", "jjdffegghgiihhfilh", "dgifdfghhfjdejhgmk",
    "edifghihfihhjgfeed", "hideiehigghggiigjd", "djdddfffhifjggefjm", "jieidjfefhhghegicf", "jedhfdhehifdeieeke",
    "ifjegghhigjihfgfbk", "gjdfjjieiejdjhgilf", "gdfdjjeiefjdjjifci", "fjhifihiigfeejeicb", "ihiihjfeffighgghhl",
    "fggighhfiehdehefij", "dhihgfgehfgdhigiff", "jhddheheeiijjefgaf", "hjhfgeiiehihehegge", "hhhjghihffheggffhm",
    "edjgeegegehghiefdf", "hegeddififhefifgci", "jggdejhffiejheefde", "ghihfegfihfegeeglj", "fgihfhgeeeeheighfm",
    "hdejihihhghdjjhhle", "gfihddeifiihhhfimb", "ddiedgiehejddeihch", "ijgjgieeeffhejgheg", "jeddehhehhdjfefeae",
    "ffifgfeeegfhffffml", "efijeiggfieghjhgdk", "hfhifiheghedhgfiah", "dhiheiefeffjeefgca", "dhifghifigfjggeejd",
    "gieddeiehidihjgglm", "hifffhgighjhjjhhbi", "gfigfieghieeejehlg", "gghijehfgghihffial", "jdgifdhhhehejhhigj",
    "eehjfghgeiegeggimd", "fdehjhfegifgdffekj", "edghfdhfifjijhhhlc", "gejjjiefgihidiffdj", "iigeehhihhfegigilk",
    "ifehijgihihegigiea", "ggfdehighfjhjfhfdf", "dideidgihihhdhiimd", "hhhiiigihgfghiifba", "gfjddjhgeiigfgggfl",
    "ieijidhegiijggfgle", "gdgeeeiheggjeifikk", "dijjgiheghdgdihgag", "gjgjddihfiiggiegje", "ihdgidhigieigjihge",
    "fdgigfifgifghhiifh", "jdiiedhhgehihjhijj", "eeiegighfejediiglm", "gfddfghehhhijfgfii", "egfjgffefejjjjeflc",
    "djfddiieffeigjhfaj", "iggigggfehgjgfeiia", "jhhheehfiiidhgehbc", "eiiijggeiiehfifebh", "hgggfghehheeffhhdb",
    "hiejfdghhhdgeigihf", "ghfggeifgidgffgihd", "gghiegheifjijjgfjj", "gfjdffhhgijdhjefig", "fjjhiegffhjijhihjd",
    "jidhddiegihiggieif", "fgjgeiiegiheffffgb", "jjggefeeihjdhihicj", "difhjdfhiifddgiejf", "iiijhiffihhhhegihj",
    "hggjfjfihhfheifhba", "efhiehiifgjdhiigdf", "hghhhihfeidjdifeme", "fdfjggiggifgfjfhbc", "ifjedgighgiihjiijf",
    "gjhgihhehefjfggfkc", "degeddfgeihijiihbb", "fhdiejfefefdjiegma", "iejidhfiehjegiieie", "jdifghggigejjfeefk",
    "gddhheihihedjhifih", "jddhfjihegejehhigd", "gjjedhhgfffjefgfja", "iedjhjeeggdhffgifb", "hjfjjhgfihgdhifemh",
    "hhgfhefigfjejjhhfm", "jihhgegieheddehebc", "fgiiiiiehijiegiiag", "heejeigeghiihegghi", "eefjejhifgdjfigida",
    "eihddegeiegjjgihhm", "higefghffgdhggfekd", "jjhefeiegfgddieifk", "ieeefeggeidhgeeimf", "igheggiffghedjhgda",
    "fdgjdeffeidjjhihbg", "dgjjdfhiheedjiiiil", "gdjjigihihjefjgfal", "iihjejiehfdddggilc", "jjeijfgiegjggeiefd",
    "didegfeeeihjggfecb", "iegfiggififijjhfgb", "gfiiiigefgjijgfiec", "jhfhgegfehejjigijd", "hiejdfihhijghiegjk",
    "ediejfegeidejfehfa", "hifjfhighefifheegg", "dehhgiiiggiidehifk", "figdedhefegdjjfhhb", "hjjjfieehfggejihie",
    "ihehfgfhhigidgiggm", "ejhjefififgddjiiba", "ddfheeihfiheejgiml", "gihijghhiidgfifglb", "jegjdgeeihejhhieif",
    "ieigehgifihgfifihb", "dihgdjghefiddjgeic", "djejdhghhhjddeeilm", "jjifhghhefjggjfglh", "jjgfeeigghjeehheih",
    "iejdgehghejjjeheah", "hehejieieidhffgihd", "gidfidgeghgdjeeeki", "ieidejfehighfiehde", "jehidhefeifedehihm",
    "hjihfihfggieejifmh", "edfigigiihijgfiemf", "egfiiiighfihjjfijm", "fjgdhfeggigjeeiifd", "iidgegigiffhjhgejk",
    "ddiiffhiggegehiecj", "gdfgihiehifjjehhll", "igjhheigihegeheief", "jjehediegghifgegcj", "eegjjjhgfiddefegab",
    "igjfedhgghjefjghck", "ihfffegefediejfhgj", "dfjjhihifeihhegfbh", "fehidiihihfdjjiiad", "fihiedighfjhgfiilf",
    "gjefeggfeiiijfhibl", "ijedgjihhijieiegfd", "dggfjjeffhgjdihidc", "fedhhhifiiijgieidb", "edidfhhihggeeeeeka",
    "hjefejeffiiheefigb", "gdejgihieiejgfhgfe", "dhijeigeegeefggigc", "eddhedheeejdhheeij", "fgjeddhfhhjghfgikd",
    "geffedifgefghjffkk", "gfddeihhifjhefhgbh", "hjffjighiefjjifglk", "fgjgfjigfijidfheie", "gfhgigeefiijdfhhab",
    "fgehhhgigifjdigihb",
)


def _rnn_numbers(seed: int) -> tuple[np.ndarray, ...]:
    """The microscope perturbed by one entry of _POOL; odd seeds swap the two state units."""
    d = np.array([_DIGITS.index(ch) - 6 for ch in _POOL[seed % len(_POOL)]], dtype=np.float64)
    X = np.round(2.0 * _X_MIC + 0.1 * d[:6].reshape(3, 2), 2)
    W_x = np.round(_W_X_MIC + 0.1 * d[6:10].reshape(2, 2), 2)
    W_h = np.round(_W_H_MIC + 0.1 * d[10:14].reshape(2, 2), 2)
    b_h = np.round(_B_H_MIC + 0.05 * d[14:16], 2)
    y = np.round(_Y_MIC + 0.1 * d[16:18], 2)
    if (seed // len(_POOL)) % 2:
        swap = [1, 0]
        W_x, W_h, b_h, y = W_x[swap], W_h[swap][:, swap], b_h[swap], y[swap]
    return tuple(a + 0.0 for a in (X, W_x, W_h, b_h, y))  # + 0.0: no -0.0 in the printout


def numbers(student: str | None) -> dict:
    """Your numbers: plain lists and floats, the same every time for the same id."""
    seed = seed_for(student)
    rng = np.random.default_rng([2, seed])
    X, W_x, W_h, b_h, y = _rnn_numbers(seed)
    ce = float(np.round(rng.uniform(1.5, 4.5), 2))
    g_W = _steps(rng, (2, 2), -30, 30, 0.1)
    g_b = _steps(rng, (2,), -10, 10, 0.1)
    g_b[0] = g_b[0] if abs(g_b[0]) >= 0.5 else 0.8  # a bias gradient that is not tiny
    norm_W = float(np.sqrt(np.sum(g_W**2)))
    while norm_W < 3.0:  # the whole gradient must be above the threshold
        g_W = np.round(g_W * 2 + 1.0, 2)
        norm_W = float(np.sqrt(np.sum(g_W**2)))
    norm_b = float(np.sqrt(np.sum(g_b**2)))
    # a threshold above the bias gradient's own norm, below the global norm
    c = float(np.round(rng.uniform(norm_b + 0.3, min(norm_W, 6.0) - 0.3), 1))
    r_small = float(rng.choice([0.5, 0.6, 0.7, 0.8, 0.9]))
    r_large = float(rng.choice([1.1, 1.2, 1.3, 1.5]))
    n = int(rng.choice([20, 30, 40, 50]))
    return {
        "rnn": {
            "X": X.tolist(),
            "W_x": W_x.tolist(),
            "W_h": W_h.tolist(),
            "b_h": b_h.tolist(),
            "y": y.tolist(),
            "t": 1,
        },
        "ce_nats": ce,
        "clip": {"g_W_h": g_W.tolist(), "g_b_h": g_b.tolist(), "max_norm": c},
        "r_small": r_small,
        "r_large": r_large,
        "n": n,
    }


def _show(student: str | None) -> str:
    v = numbers(student)
    r = v["rnn"]
    who = f"variant key {student.strip().lower()!r}" if student and student.strip() else "the default variant (no key)"
    lines = [
        f"Your numbers for a2 ({who}, seed {seed_for(student)}):",
        "",
        "[g_matrix] an RNN with D = H = 2, T = 3, h_{-1} = 0, L = 0.5 ||h_2 - y||^2:",
        f"  X   = {r['X']}   (rows x_0, x_1, x_2)",
        f"  W_x = {r['W_x']}",
        f"  W_h = {r['W_h']}",
        f"  b_h = {r['b_h']}",
        f"  y   = {r['y']}",
        f"  give G_{r['t']} = (g^z_{r['t']})^T h_{r['t'] - 1}  (a 2x2 array)",
        "",
        f"[perplexity] mean cross-entropy CE = {v['ce_nats']} nats per token",
        "",
        "[clipped_b_h] gradients of one model, clipped together by their global norm:",
        f"  grad W_h = {v['clip']['g_W_h']}",
        f"  grad b_h = {v['clip']['g_b_h']}",
        f"  max_norm c = {v['clip']['max_norm']}",
        "",
        f"[path_factors] r_small = {v['r_small']}, r_large = {v['r_large']}, n = {v['n']} steps",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(_show(sys.argv[1] if len(sys.argv) > 1 else None))
