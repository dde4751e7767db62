"""Bilingual English-German lexicon of the synthetic corpus.

Everything here is plain data plus the German inflection tables; the sentence
structures that use it live in :mod:`syntax_nmt.synthetic.grammar`. The data are
written as compact ``|``-separated lines and parsed once by :func:`load_lexicon`
(cached), so importing this module has no side effects beyond defining strings.

German morphology handled here:

* nouns: gender, plural, weak masculine nouns (n-declension: ``der Junge``,
  ``den Jungen``), genitive singular ``-s``/``-es``, dative plural ``-n``;
* compounds: a German combining form (``Verkehrs``, ``Haftpflichtversicherungs``)
  glued to a head noun (``Ministerium``), inheriting gender and declension of the
  head; the English side is a multi-word compound (``transport ministry``);
* determiners (definite, ``dieser``/``jeder``, ``ein``/``kein``/possessives),
  adjective endings (weak, mixed, strong), relative pronouns;
* verbs: present/past 3rd person singular and plural, participle, perfect
  auxiliary (``haben``/``sein``), separable prefixes (``ruft ... an``), dative
  objects (``helfen``).
"""

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

# --------------------------------------------------------------------------
# inflection tables (case -> gender/number key -> form); gn in m, f, n, pl
# --------------------------------------------------------------------------

CASES = ("nom", "acc", "dat", "gen")

DEF_ARTICLE = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"},
    "gen": {"m": "des", "f": "der", "n": "des", "pl": "der"},
}
DER_WORD_END = {  # dieser, jeder
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
    "gen": {"m": "es", "f": "er", "n": "es", "pl": "er"},
}
EIN_WORD_END = {  # ein, kein, mein, unser
    "nom": {"m": "", "f": "e", "n": "", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
    "gen": {"m": "es", "f": "er", "n": "es", "pl": "er"},
}
ADJ_WEAK = {  # after der/dieser/jeder
    "nom": {"m": "e", "f": "e", "n": "e", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "e", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
    "gen": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
ADJ_MIXED = {  # after ein/kein/mein/unser
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
    "gen": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
ADJ_STRONG = {  # no determiner, or an undeclined numeral
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
    "gen": {"m": "en", "f": "er", "n": "en", "pl": "er"},
}
REL_PRONOUN = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "denen"},
    "gen": {"m": "dessen", "f": "deren", "n": "dessen", "pl": "deren"},
}
# preposition + definite article contractions (only with the plain article)
CONTRACTIONS = {
    ("in", "dem"): "im", ("in", "das"): "ins", ("an", "dem"): "am", ("an", "das"): "ans",
    ("zu", "dem"): "zum", ("zu", "der"): "zur", ("von", "dem"): "vom", ("bei", "dem"): "beim",
}
# finite forms of auxiliaries / modals: key -> (3sg, 3pl)
AUX_FORMS = {
    "haben": ("hat", "haben"), "sein": ("ist", "sind"), "werden": ("wird", "werden"),
    "können": ("kann", "können"), "müssen": ("muss", "müssen"),
}

_VOWELS = "aeiouäöüy"


def genitive_singular(form: str) -> str:
    """Default genitive singular of a strong masculine/neuter noun.

    ``-nis`` -> ``-nisses``; sibilant ending -> ``-es``; vowel ending -> ``-s``;
    one syllable -> ``-es``; otherwise ``-s`` (``Hauses``, ``Autos``, ``Mannes``,
    ``Ministeriums``). Irregular nouns carry an explicit ``gen=`` in the data.
    """
    low = form.lower()
    if low.endswith("nis"):
        return form + "ses"
    if low.endswith(("s", "ß", "x", "z", "sch")):
        return form + "es"
    if low[-1] in _VOWELS:
        return form + "s"
    if len(re.findall(f"[{_VOWELS}]+", low)) == 1:
        return form + "es"
    return form + "s"


def dative_plural(form: str) -> str:
    """Dative plural: add ``-n`` unless the plural already ends in ``-n`` or ``-s``."""
    return form if form.endswith(("n", "s")) else form + "n"


# --------------------------------------------------------------------------
# entry types
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Noun:
    """A common noun (possibly a compound).

    Attributes:
        en, en_pl: English singular / plural head word.
        de, de_pl: German nominative singular / plural (the whole compound).
        gender: ``m``, ``f`` or ``n``.
        classes: semantic classes (see :data:`CLASS_NAMES`), a string of letters.
        weak: oblique singular of a weak masculine noun (``Jungen``), else None.
        gen: genitive singular (computed for m/n when not given).
        en_mods: English compound modifiers before the head, each
            ``(form, upos, xpos, deprel, head)`` with ``head`` the index of another
            modifier or ``None`` for the head noun.
        is_head: may serve as the head of a generated compound.
    """

    en: str
    en_pl: str
    de: str
    de_pl: str
    gender: str
    classes: str
    weak: Optional[str] = None
    gen: Optional[str] = None
    en_mods: Tuple[Tuple[str, str, str, str, Optional[int]], ...] = ()
    is_head: bool = False

    @property
    def key(self) -> str:
        return " ".join([m[0] for m in self.en_mods] + [self.en])

    def de_form(self, case: str, number: str) -> str:
        """German form for a case (nom/acc/dat/gen) and number (sg/pl)."""
        if number == "pl":
            return dative_plural(self.de_pl) if case == "dat" else self.de_pl
        if self.weak and case != "nom":
            return self.weak
        if case == "gen" and self.gender in "mn":
            return self.gen or genitive_singular(self.de)
        return self.de

    @property
    def animate(self) -> bool:
        return "P" in self.classes or "A" in self.classes


@dataclass(frozen=True)
class Name:
    """A proper name (identical in both languages, no article)."""

    form: str
    gender: str

    @property
    def key(self) -> str:
        return self.form


@dataclass(frozen=True)
class Verb:
    """A verb with its English and German forms and its argument frame.

    ``frame`` is one of ``tr`` (subject + accusative object), ``dat`` (English
    direct object, German dative object), ``ditr`` (subject + dative indirect +
    accusative direct object), ``intr``, ``ccomp`` (subject + that-clause) and
    ``cop`` (``be`` + predicative adjective).
    """

    frame: str
    en_base: str
    en_3sg: str
    en_past: str
    en_pp: str
    de_inf: str  # without separable prefix
    de_3sg: str  # without separable prefix
    de_past: str  # 3sg, without separable prefix
    de_pp: str  # full participle (with prefix)
    aux: str  # "haben" or "sein"
    prefix: str = ""  # separable prefix ("an" in anrufen)
    subj: str = "P"
    obj: str = ""
    iobj: str = ""
    dbl: bool = True  # English double-object construction allowed (ditr)
    motion: bool = False  # allows directional PPs (into, onto, to, through...)

    @property
    def key(self) -> str:
        return self.en_base

    def de_present(self, number: str) -> str:
        if self.de_inf == "sein":
            return "ist" if number == "sg" else "sind"
        return self.de_3sg if number == "sg" else self.de_inf

    def de_preterite(self, number: str) -> str:
        if number == "sg":
            return self.de_past
        return self.de_past + ("n" if self.de_past.endswith("e") else "en")

    @property
    def de_infinitive(self) -> str:
        return self.prefix + self.de_inf


@dataclass(frozen=True)
class Adjective:
    """``classes``: ``A`` (animate nouns), ``I`` (inanimate) or ``*`` (any)."""

    en: str
    de: str  # predicative form
    stem: str  # attributive stem ("teur" for teuer)
    classes: str = "*"

    @property
    def key(self) -> str:
        return self.en


@dataclass(frozen=True)
class Adverb:
    """A manner adverb (``carefully`` -> ``sorgfältig``)."""

    en: str
    de: str

    @property
    def key(self) -> str:
        return self.en


@dataclass(frozen=True)
class TimeExpr:
    """A time adverbial: an adverb (``yesterday``), a noun phrase (``last week``,
    ``every morning``) or a day (``on Monday`` -> ``am Montag``).

    ``en`` tokens are ``(form, upos, xpos, deprel, head)`` with ``head`` an index
    into ``en`` or ``None`` for the phrase head; ``de`` are German tokens;
    ``tenses`` the clause tenses it combines with.
    """

    key: str
    en: Tuple[Tuple[str, str, str, str, Optional[int]], ...]
    de: Tuple[str, ...]
    tenses: Tuple[str, ...]
    frontable: bool = True


@dataclass(frozen=True)
class Prep:
    """A preposition; ``case`` is the German case it governs (``gen`` for the
    English ``of``, realised as a bare German genitive)."""

    en: str
    de: str
    case: str
    classes: str  # semantic classes of the object noun
    kind: str  # loc, dir, com (comitative etc.), temp, gen
    xpos: str = "IN"

    @property
    def key(self) -> str:
        return self.en


@dataclass(frozen=True)
class Determiner:
    """English determiner -> German determiner class.

    ``de_kind``: ``def`` (der), ``der`` (dieser/jeder, base in ``de_base``),
    ``ein`` (ein/kein/mein/unser), ``num`` (undeclined numeral) or ``bare``.
    ``numbers``: ``sg``, ``pl`` or ``sgpl``.
    """

    key: str
    en: str
    upos: str
    xpos: str
    deprel: str
    de_kind: str
    de_base: str
    numbers: str

    def de_form(self, case: str, gn: str) -> Optional[str]:
        if self.de_kind == "def":
            return DEF_ARTICLE[case][gn]
        if self.de_kind == "der":
            return self.de_base + DER_WORD_END[case][gn]
        if self.de_kind == "ein":
            return self.de_base + EIN_WORD_END[case][gn]
        if self.de_kind == "num":
            return self.de_base
        return None

    @property
    def adj_table(self) -> Dict[str, Dict[str, str]]:
        return {"def": ADJ_WEAK, "der": ADJ_WEAK, "ein": ADJ_MIXED}.get(self.de_kind, ADJ_STRONG)


CLASS_NAMES = {
    "P": "person", "A": "animal", "T": "portable thing", "X": "text/document",
    "F": "food", "D": "drink", "L": "place/container (in ...)", "S": "surface (on ...)",
    "V": "vehicle", "O": "organisation", "E": "event", "B": "abstract", "Y": "tellable",
}

# --------------------------------------------------------------------------
# data: nouns   "en en_pl | de de_pl gender | classes [| key=value | flag]"
# multi-word English nouns (fixed compounds) use "_" between words.
# --------------------------------------------------------------------------

NOUNS = """
man men | Mann Männer m | P
woman women | Frau Frauen f | P
child children | Kind Kinder n | P
boy boys | Junge Jungen m | P | weak
girl girls | Mädchen Mädchen n | P
teacher teachers | Lehrer Lehrer m | P
student students | Student Studenten m | P | weak
doctor doctors | Arzt Ärzte m | P
nurse nurses | Krankenschwester Krankenschwestern f | P
farmer farmers | Bauer Bauern m | P | weak=Bauern
baker bakers | Bäcker Bäcker m | P
butcher butchers | Metzger Metzger m | P
cook cooks | Koch Köche m | P
driver drivers | Fahrer Fahrer m | P
pilot pilots | Pilot Piloten m | P | weak
soldier soldiers | Soldat Soldaten m | P | weak
policeman policemen | Polizist Polizisten m | P | weak
lawyer lawyers | Anwalt Anwälte m | P
judge judges | Richter Richter m | P
king kings | König Könige m | P
queen queens | Königin Königinnen f | P
prince princes | Prinz Prinzen m | P | weak
princess princesses | Prinzessin Prinzessinnen f | P
neighbor neighbors | Nachbar Nachbarn m | P | weak=Nachbarn
friend friends | Freund Freunde m | P
girlfriend girlfriends | Freundin Freundinnen f | P
mother mothers | Mutter Mütter f | P
father fathers | Vater Väter m | P
sister sisters | Schwester Schwestern f | P
brother brothers | Bruder Brüder m | P
daughter daughters | Tochter Töchter f | P
son sons | Sohn Söhne m | P
grandmother grandmothers | Großmutter Großmütter f | P
grandfather grandfathers | Großvater Großväter m | P
granddaughter granddaughters | Enkelin Enkelinnen f | P
grandson grandsons | Enkel Enkel m | P
uncle uncles | Onkel Onkel m | P
aunt aunts | Tante Tanten f | P
baby babies | Baby Babys n | P
guest guests | Gast Gäste m | P
customer customers | Kunde Kunden m | P | weak
salesman salesmen | Verkäufer Verkäufer m | P
waiter waiters | Kellner Kellner m | P
waitress waitresses | Kellnerin Kellnerinnen f | P
writer writers | Schriftsteller Schriftsteller m | P
poet poets | Dichter Dichter m | P
painter painters | Maler Maler m | P
singer singers | Sänger Sänger m | P
musician musicians | Musiker Musiker m | P
dancer dancers | Tänzer Tänzer m | P
actor actors | Schauspieler Schauspieler m | P
actress actresses | Schauspielerin Schauspielerinnen f | P
journalist journalists | Journalist Journalisten m | P | weak
photographer photographers | Fotograf Fotografen m | P | weak
architect architects | Architekt Architekten m | P | weak
engineer engineers | Ingenieur Ingenieure m | P
scientist scientists | Wissenschaftler Wissenschaftler m | P
professor professors | Professor Professoren m | P
director directors | Direktor Direktoren m | P | head
manager managers | Manager Manager m | P
minister ministers | Minister Minister m | P | head
president presidents | Präsident Präsidenten m | P | weak | head
mayor mayors | Bürgermeister Bürgermeister m | P
tourist tourists | Tourist Touristen m | P | weak
thief thieves | Dieb Diebe m | P
hunter hunters | Jäger Jäger m | P
fisherman fishermen | Fischer Fischer m | P
gardener gardeners | Gärtner Gärtner m | P
carpenter carpenters | Tischler Tischler m | P
plumber plumbers | Klempner Klempner m | P
mechanic mechanics | Mechaniker Mechaniker m | P
postman postmen | Briefträger Briefträger m | P
secretary secretaries | Sekretärin Sekretärinnen f | P
colleague colleagues | Kollege Kollegen m | P | weak
boss bosses | Chef Chefs m | P | gen=Chefs
worker workers | Arbeiter Arbeiter m | P
pupil pupils | Schüler Schüler m | P
expert experts | Experte Experten m | P | weak | head
lady ladies | Dame Damen f | P
witch witches | Hexe Hexen f | P
wizard wizards | Zauberer Zauberer m | P
giant giants | Riese Riesen m | P | weak
dwarf dwarfs | Zwerg Zwerge m | P
knight knights | Ritter Ritter m | P
sailor sailors | Matrose Matrosen m | P | weak
captain captains | Kapitän Kapitäne m | P
monk monks | Mönch Mönche m | P
nun nuns | Nonne Nonnen f | P
priest priests | Priester Priester m | P
bride brides | Braut Bräute f | P
bridegroom bridegrooms | Bräutigam Bräutigame m | P
widow widows | Witwe Witwen f | P
hero heroes | Held Helden m | P | weak
emperor emperors | Kaiser Kaiser m | P
shepherd shepherds | Schäfer Schäfer m | P
blacksmith blacksmiths | Schmied Schmiede m | P
beekeeper beekeepers | Imker Imker m | P
locksmith locksmiths | Schlosser Schlosser m | P
pharmacist pharmacists | Apotheker Apotheker m | P
dentist dentists | Zahnarzt Zahnärzte m | P
veterinarian veterinarians | Tierarzt Tierärzte m | P
librarian librarians | Bibliothekar Bibliothekare m | P
chancellor chancellors | Kanzler Kanzler m | P
ambassador ambassadors | Botschafter Botschafter m | P
spokesman spokesmen | Sprecher Sprecher m | P | head
citizen citizens | Bürger Bürger m | P
passenger passengers | Passagier Passagiere m | P
visitor visitors | Besucher Besucher m | P
owner owners | Besitzer Besitzer m | P
inventor inventors | Erfinder Erfinder m | P
detective detectives | Detektiv Detektive m | P
spy spies | Spion Spione m | P
clown clowns | Clown Clowns m | P | gen=Clowns
athlete athletes | Sportler Sportler m | P
coach coaches | Trainer Trainer m | P
referee referees | Schiedsrichter Schiedsrichter m | P
player players | Spieler Spieler m | P
dog dogs | Hund Hunde m | A
cat cats | Katze Katzen f | A
horse horses | Pferd Pferde n | A
cow cows | Kuh Kühe f | A
pig pigs | Schwein Schweine n | A
bird birds | Vogel Vögel m | A
mouse mice | Maus Mäuse f | A
rabbit rabbits | Kaninchen Kaninchen n | A
hare hares | Hase Hasen m | A | weak
fox foxes | Fuchs Füchse m | A
wolf wolves | Wolf Wölfe m | A
bear bears | Bär Bären m | A | weak
lion lions | Löwe Löwen m | A | weak
tiger tigers | Tiger Tiger m | A
elephant elephants | Elefant Elefanten m | A | weak
monkey monkeys | Affe Affen m | A | weak
goat goats | Ziege Ziegen f | A
chicken chickens | Huhn Hühner n | A
duck ducks | Ente Enten f | A
goose geese | Gans Gänse f | A
owl owls | Eule Eulen f | A
eagle eagles | Adler Adler m | A
snake snakes | Schlange Schlangen f | A
frog frogs | Frosch Frösche m | A
hedgehog hedgehogs | Igel Igel m | A
squirrel squirrels | Eichhörnchen Eichhörnchen n | A
donkey donkeys | Esel Esel m | A
camel camels | Kamel Kamele n | A
giraffe giraffes | Giraffe Giraffen f | A
zebra zebras | Zebra Zebras n | A
parrot parrots | Papagei Papageien m | A
dolphin dolphins | Delfin Delfine m | A
whale whales | Wal Wale m | A
shark sharks | Hai Haie m | A
turtle turtles | Schildkröte Schildkröten f | A
butterfly butterflies | Schmetterling Schmetterlinge m | A
bee bees | Biene Bienen f | A
spider spiders | Spinne Spinnen f | A
ant ants | Ameise Ameisen f | A
stag stags | Hirsch Hirsche m | A
raven ravens | Rabe Raben m | A | weak
swan swans | Schwan Schwäne m | A
stork storks | Storch Störche m | A
badger badgers | Dachs Dachse m | A
mole moles | Maulwurf Maulwürfe m | A
beaver beavers | Biber Biber m | A
penguin penguins | Pinguin Pinguine m | A
kangaroo kangaroos | Känguru Kängurus n | A
crocodile crocodiles | Krokodil Krokodile n | A
puppy puppies | Welpe Welpen m | A | weak
kitten kittens | Kätzchen Kätzchen n | A
bull bulls | Stier Stiere m | A
rooster roosters | Hahn Hähne m | A
book books | Buch Bücher n | TX
letter letters | Brief Briefe m | TX
newspaper newspapers | Zeitung Zeitungen f | TX
magazine magazines | Zeitschrift Zeitschriften f | TX
report reports | Bericht Berichte m | X | head
contract contracts | Vertrag Verträge m | X | head
story stories | Geschichte Geschichten f | XY
poem poems | Gedicht Gedichte n | X
map maps | Karte Karten f | TX
ticket tickets | Fahrkarte Fahrkarten f | TX
bill bills | Rechnung Rechnungen f | X
note notes | Notiz Notizen f | X
message messages | Nachricht Nachrichten f | XY
postcard postcards | Postkarte Postkarten f | TX
novel novels | Roman Romane m | TX
dictionary dictionaries | Wörterbuch Wörterbücher n | TX
document documents | Dokument Dokumente n | X
photo photos | Foto Fotos n | TX
picture pictures | Bild Bilder n | T
key keys | Schlüssel Schlüssel m | T
ball balls | Ball Bälle m | T
bag bags | Tasche Taschen f | TL
box boxes | Kiste Kisten f | TLS
bottle bottles | Flasche Flaschen f | T
cup cups | Tasse Tassen f | T
glass glasses | Glas Gläser n | T
plate plates | Teller Teller m | TS
spoon spoons | Löffel Löffel m | T
fork forks | Gabel Gabeln f | T
knife knives | Messer Messer n | T
pen pens | Stift Stifte m | T
pencil pencils | Bleistift Bleistifte m | T
umbrella umbrellas | Regenschirm Regenschirme m | T
hat hats | Hut Hüte m | T
coat coats | Mantel Mäntel m | T
shoe shoes | Schuh Schuhe m | T
dress dresses | Kleid Kleider n | T
shirt shirts | Hemd Hemden n | T
clock clocks | Uhr Uhren f | T
lamp lamps | Lampe Lampen f | T
chair chairs | Stuhl Stühle m | TS
table tables | Tisch Tische m | S
bed beds | Bett Betten n | S
sofa sofas | Sofa Sofas n | S
desk desks | Schreibtisch Schreibtische m | S
shelf shelves | Regal Regale n | S
door doors | Tür Türen f | T
window windows | Fenster Fenster n | T
mirror mirrors | Spiegel Spiegel m | T
computer computers | Computer Computer m | T
phone phones | Telefon Telefone n | T
camera cameras | Kamera Kameras f | T
radio radios | Radio Radios n | T
television televisions | Fernseher Fernseher m | T
guitar guitars | Gitarre Gitarren f | T
piano pianos | Klavier Klaviere n | T
violin violins | Geige Geigen f | T
drum drums | Trommel Trommeln f | T
toy toys | Spielzeug Spielzeuge n | T
doll dolls | Puppe Puppen f | T
gift gifts | Geschenk Geschenke n | T
flower flowers | Blume Blumen f | T
rose roses | Rose Rosen f | T
ring rings | Ring Ringe m | T
necklace necklaces | Halskette Halsketten f | T
wallet wallets | Geldbeutel Geldbeutel m | T
suitcase suitcases | Koffer Koffer m | TL
basket baskets | Korb Körbe m | TL
bucket buckets | Eimer Eimer m | TL
drawer drawers | Schublade Schubladen f | L
ladder ladders | Leiter Leitern f | T
hammer hammers | Hammer Hämmer m | T
rope ropes | Seil Seile n | T
candle candles | Kerze Kerzen f | T
stone stones | Stein Steine m | TS
coin coins | Münze Münzen f | T
wheelbarrow wheelbarrows | Schubkarre Schubkarren f | TL
blanket blankets | Decke Decken f | T
pillow pillows | Kissen Kissen n | TS
towel towels | Handtuch Handtücher n | T
sword swords | Schwert Schwerter n | T
shield shields | Schild Schilde m | T
crown crowns | Krone Kronen f | T
telescope telescopes | Fernrohr Fernrohre n | T
compass compasses | Kompass Kompasse m | T
lantern lanterns | Laterne Laternen f | T
kite kites | Drachen Drachen m | T
bicycle bicycles | Fahrrad Fahrräder n | VS
car cars | Auto Autos n | VL
bus buses | Bus Busse m | VL | gen=Busses
train trains | Zug Züge m | VL
ship ships | Schiff Schiffe n | VS
boat boats | Boot Boote n | VL
plane planes | Flugzeug Flugzeuge n | VL
truck trucks | Lastwagen Lastwagen m | VL
tractor tractors | Traktor Traktoren m | VS
taxi taxis | Taxi Taxis n | VL
motorcycle motorcycles | Motorrad Motorräder n | VS
helicopter helicopters | Hubschrauber Hubschrauber m | VL
tram trams | Straßenbahn Straßenbahnen f | VL
apple apples | Apfel Äpfel m | F
pear pears | Birne Birnen f | F
banana bananas | Banane Bananen f | F
orange oranges | Orange Orangen f | F
lemon lemons | Zitrone Zitronen f | F
cherry cherries | Kirsche Kirschen f | F
strawberry strawberries | Erdbeere Erdbeeren f | F
cake cakes | Kuchen Kuchen m | F
cookie cookies | Keks Kekse m | F
bread breads | Brot Brote n | F
sandwich sandwiches | Sandwich Sandwiches n | F | gen=Sandwichs
sausage sausages | Wurst Würste f | F
cheese cheeses | Käse Käse m | F
egg eggs | Ei Eier n | F
soup soups | Suppe Suppen f | F
pizza pizzas | Pizza Pizzas f | F
potato potatoes | Kartoffel Kartoffeln f | F
tomato tomatoes | Tomate Tomaten f | F
carrot carrots | Karotte Karotten f | F
onion onions | Zwiebel Zwiebeln f | F
cucumber cucumbers | Gurke Gurken f | F
pie pies | Torte Torten f | F
nut nuts | Nuss Nüsse f | F
pretzel pretzels | Brezel Brezeln f | F
dumpling dumplings | Knödel Knödel m | F
pancake pancakes | Pfannkuchen Pfannkuchen m | F
coffee coffees | Kaffee Kaffees m | D
tea teas | Tee Tees m | D
beer beers | Bier Biere n | D
wine wines | Wein Weine m | D
juice juices | Saft Säfte m | D
lemonade lemonades | Limonade Limonaden f | D
house houses | Haus Häuser n | L
garden gardens | Garten Gärten m | L
park parks | Park Parks m | L | gen=Parks
city cities | Stadt Städte f | L
village villages | Dorf Dörfer n | L
street streets | Straße Straßen f | LS
school schools | Schule Schulen f | L
church churches | Kirche Kirchen f | L
castle castles | Schloss Schlösser n | L
tower towers | Turm Türme m | LS
bridge bridges | Brücke Brücken f | S
station stations | Bahnhof Bahnhöfe m | L
airport airports | Flughafen Flughäfen m | L
hospital hospitals | Krankenhaus Krankenhäuser n | L
library libraries | Bibliothek Bibliotheken f | L
museum museums | Museum Museen n | L
restaurant restaurants | Restaurant Restaurants n | L
hotel hotels | Hotel Hotels n | L
office offices | Büro Büros n | L | head
shop shops | Laden Läden m | L
supermarket supermarkets | Supermarkt Supermärkte m | L
bakery bakeries | Bäckerei Bäckereien f | L
kitchen kitchens | Küche Küchen f | L
room rooms | Zimmer Zimmer n | L
bathroom bathrooms | Badezimmer Badezimmer n | L
cellar cellars | Keller Keller m | L
roof roofs | Dach Dächer n | S
forest forests | Wald Wälder m | L
field fields | Feld Felder n | LS
meadow meadows | Wiese Wiesen f | LS
mountain mountains | Berg Berge m | S
hill hills | Hügel Hügel m | S
lake lakes | See Seen m | L
river rivers | Fluss Flüsse m | L
sea seas | Meer Meere n | L
island islands | Insel Inseln f | S
harbor harbors | Hafen Häfen m | L
farm farms | Bauernhof Bauernhöfe m | S
stadium stadiums | Stadion Stadien n | L
theater theaters | Theater Theater n | L
cinema cinemas | Kino Kinos n | L
zoo zoos | Zoo Zoos m | L
prison prisons | Gefängnis Gefängnisse n | L
palace palaces | Palast Paläste m | L
cave caves | Höhle Höhlen f | L
tent tents | Zelt Zelte n | L
lighthouse lighthouses | Leuchtturm Leuchttürme m | LS
barn barns | Scheune Scheunen f | L
stable stables | Stall Ställe m | L
factory factories | Fabrik Fabriken f | L
bank banks | Bank Banken f | LO | head
pharmacy pharmacies | Apotheke Apotheken f | L
town_hall town_halls | Rathaus Rathäuser n | L
fire_station fire_stations | Feuerwache Feuerwachen f | L
police_station police_stations | Polizeiwache Polizeiwachen f | L
post_office post_offices | Postamt Postämter n | L
living_room living_rooms | Wohnzimmer Wohnzimmer n | L
bus_stop bus_stops | Bushaltestelle Bushaltestellen f | L
city_center city_centers | Stadtzentrum Stadtzentren n | L
parking_lot parking_lots | Parkplatz Parkplätze m | S
company companies | Gesellschaft Gesellschaften f | O | head
firm firms | Firma Firmen f | O
government governments | Regierung Regierungen f | O
ministry ministries | Ministerium Ministerien n | O | head
authority authorities | Behörde Behörden f | O | head
committee committees | Ausschuss Ausschüsse m | O | head
council councils | Rat Räte m | O | head
parliament parliaments | Parlament Parlamente n | OL
court courts | Gericht Gerichte n | OL | head
army armies | Armee Armeen f | O
team teams | Mannschaft Mannschaften f | O
club clubs | Verein Vereine m | O
association associations | Verband Verbände m | O | head
union unions | Gewerkschaft Gewerkschaften f | O
university universities | Universität Universitäten f | OL
orchestra orchestras | Orchester Orchester n | O
choir choirs | Chor Chöre m | O
party parties | Partei Parteien f | O
agency agencies | Agentur Agenturen f | O | head
institute institutes | Institut Institute n | OL | head
commission commissions | Kommission Kommissionen f | O | head
department departments | Abteilung Abteilungen f | O | head
bureau bureaus | Amt Ämter n | O | head
fund funds | Fonds Fonds m | O | gen=Fonds | head
meeting meetings | Treffen Treffen n | E
concert concerts | Konzert Konzerte n | E
celebration celebrations | Feier Feiern f | E
wedding weddings | Hochzeit Hochzeiten f | E
game games | Spiel Spiele n | E
lecture lectures | Vorlesung Vorlesungen f | E
exam exams | Prüfung Prüfungen f | E
trip trips | Reise Reisen f | E
storm storms | Sturm Stürme m | E
war wars | Krieg Kriege m | E
festival festivals | Fest Feste n | E
breakfast breakfasts | Frühstück Frühstücke n | EF
lunch lunches | Mittagessen Mittagessen n | EF
dinner dinners | Abendessen Abendessen n | EF
conference conferences | Konferenz Konferenzen f | E | head
performance performances | Vorstellung Vorstellungen f | E
election elections | Wahl Wahlen f | E
trial trials | Prozess Prozesse m | E
interview interviews | Interview Interviews n | E
ceremony ceremonies | Zeremonie Zeremonien f | E
excursion excursions | Ausflug Ausflüge m | E
plan plans | Plan Pläne m | B | head
idea ideas | Idee Ideen f | B
problem problems | Problem Probleme n | B | head
question questions | Frage Fragen f | B
answer answers | Antwort Antworten f | BX
decision decisions | Entscheidung Entscheidungen f | B
proposal proposals | Vorschlag Vorschläge m | B
law laws | Gesetz Gesetze n | BX | head
rule rules | Regel Regeln f | B
project projects | Projekt Projekte n | B | head
offer offers | Angebot Angebote n | B
price prices | Preis Preise m | B
solution solutions | Lösung Lösungen f | B
mistake mistakes | Fehler Fehler m | B
secret secrets | Geheimnis Geheimnisse n | BY
result results | Ergebnis Ergebnisse n | B
reform reforms | Reform Reformen f | B | head
budget budgets | Haushalt Haushalte m | B | head
strategy strategies | Strategie Strategien f | B | head
program programs | Programm Programme n | B | head
system systems | System Systeme n | B | head
crisis crises | Krise Krisen f | B | head
risk risks | Risiko Risiken n | B
success successes | Erfolg Erfolge m | B
promise promises | Versprechen Versprechen n | B
request requests | Bitte Bitten f | B
complaint complaints | Beschwerde Beschwerden f | B
warning warnings | Warnung Warnungen f | BY
rumor rumors | Gerücht Gerüchte n | BY
theory theories | Theorie Theorien f | B
policy policies | Politik Politiken f | B | head
joke jokes | Witz Witze m | Y
truth truths | Wahrheit Wahrheiten f | Y
lie lies | Lüge Lügen f | Y
fairy_tale fairy_tales | Märchen Märchen n | XY
"""

# compound modifiers: "english words | German combining form"
COMPOUND_MODIFIERS = """
transport | Verkehrs
health | Gesundheits
education | Bildungs
environment | Umwelt
energy | Energie
finance | Finanz
justice | Justiz
culture | Kultur
agriculture | Landwirtschafts
economy | Wirtschafts
defense | Verteidigungs
labor | Arbeits
tax | Steuer
pension | Renten
insurance | Versicherungs
security | Sicherheits
research | Forschungs
science | Wissenschafts
water | Wasser
electricity | Strom
railway | Bahn
fire | Feuer
accident | Unfall
travel | Reise
food | Lebensmittel
trade | Handels
tourism | Tourismus
sport | Sport
family | Familien
youth | Jugend
housing | Wohnungs
climate | Klima
construction | Bau
city | Stadt
state | Landes
consumer | Verbraucher
data | Daten
school | Schul
hospital | Krankenhaus
police | Polizei
customs | Zoll
border | Grenz
weather | Wetter
press | Presse
liability insurance | Haftpflichtversicherungs
health insurance | Krankenversicherungs
pension insurance | Rentenversicherungs
accident insurance | Unfallversicherungs
road traffic | Straßenverkehrs
air traffic | Luftverkehrs
water supply | Wasserversorgungs
energy supply | Energieversorgungs
waste disposal | Abfallentsorgungs
data protection | Datenschutz
consumer protection | Verbraucherschutz
climate protection | Klimaschutz
environment protection | Umweltschutz
disaster protection | Katastrophenschutz
income tax | Einkommensteuer
property tax | Grundsteuer
labor market | Arbeitsmarkt
"""

# English adjectives that become German compound prefixes (federal transport
# ministry -> Bundesverkehrsministerium)
PREFIX_ADJECTIVES = """
federal | Bundes
national | National
regional | Regional
central | Zentral
"""

NAMES = """
Anna f
Maria f
Laura f
Julia f
Lisa f
Sarah f
Emma f
Sophie f
Lena f
Clara f
Hannah f
Mia f
Eva f
Nina f
Greta f
Ida f
Johanna f
Ulrike f
Gertrud f
Brunhilde f
Peter m
Paul m
Thomas m
Michael m
Daniel m
David m
Martin m
Stefan m
Jonas m
Lukas m
Felix m
Max m
Leon m
Ben m
Tim m
Oskar m
Hans m
Klaus m
Frank m
Otto m
Karl m
Moritz m
Wolfgang m
Siegfried m
"""

# verbs: "en base 3sg past pp | de inf 3sg past participle aux | subj | obj [| iobj] [| flags]"
# German infinitive "an+rufen" marks a separable prefix; 3sg/past then exclude it.
TRANSITIVE = """
see sees saw seen | sehen sieht sah gesehen h | PA | PATXFLVS
find finds found found | finden findet fand gefunden h | PA | PATXFV
buy buys bought bought | kaufen kauft kaufte gekauft h | PO | ATXFDVL
sell sells sold sold | verkaufen verkauft verkaufte verkauft h | PO | ATXFDVL
build builds built built | bauen baut baute gebaut h | PO | LVS
read reads read read | lesen liest las gelesen h | P | X
write writes wrote written | schreiben schreibt schrieb geschrieben h | P | X
visit visits visited visited | besuchen besucht besuchte besucht h | P | PL
meet meets met met | treffen trifft traf getroffen h | P | P
love loves loved loved | lieben liebt liebte geliebt h | PA | PAFL
like likes liked liked | mögen mag mochte gemocht h | PA | PAFDLTX
hate hates hated hated | hassen hasst hasste gehasst h | PA | PAFB
need needs needed needed | brauchen braucht brauchte gebraucht h | PAO | TXFDVP
take takes took taken | nehmen nimmt nahm genommen h | P | TXFD
carry carries carried carried | tragen trägt trug getragen h | P | TXFA
open opens opened opened | öffnen öffnet öffnete geöffnet h | P | TX
close closes closed closed | schließen schließt schloss geschlossen h | PO | TL
eat eats ate eaten | essen isst aß gegessen h | P | F
drink drinks drank drunk | trinken trinkt trank getrunken h | PA | D
cook cooks cooked cooked | kochen kocht kochte gekocht h | P | F
paint paints painted painted | malen malt malte gemalt h | P | PA
wash washes washed washed | waschen wäscht wusch gewaschen h | P | PATV
clean cleans cleaned cleaned | putzen putzt putzte geputzt h | P | TLVS
repair repairs repaired repaired | reparieren repariert reparierte repariert h | PO | TVL
lose loses lost lost | verlieren verliert verlor verloren h | PO | TX
forget forgets forgot forgotten | vergessen vergisst vergaß vergessen h | P | TXPB
hear hears heard heard | hören hört hörte gehört h | PA | PAE
catch catches caught caught | fangen fängt fing gefangen h | PA | AT
chase chases chased chased | jagen jagt jagte gejagt h | PA | PA
feed feeds fed fed | füttern füttert fütterte gefüttert h | P | PA
draw draws drew drawn | zeichnen zeichnet zeichnete gezeichnet h | P | PATLVS
photograph photographs photographed photographed | fotografieren fotografiert fotografierte fotografiert h | P | PATLVS
order orders ordered ordered | bestellen bestellt bestellte bestellt h | PO | FDTX
pay pays paid paid | bezahlen bezahlt bezahlte bezahlt h | PO | PX
check checks checked checked | prüfen prüft prüfte geprüft h | PO | XTVB
sign signs signed signed | unterschreiben unterschreibt unterschrieb unterschrieben h | PO | X
publish publishes published published | veröffentlichen veröffentlicht veröffentlichte veröffentlicht h | PO | XB
criticize criticizes criticized criticized | kritisieren kritisiert kritisierte kritisiert h | PO | POXB
support supports supported supported | unterstützen unterstützt unterstützte unterstützt h | PO | POB
discover discovers discovered discovered | entdecken entdeckt entdeckte entdeckt h | PA | ATLSB
steal steals stole stolen | stehlen stiehlt stahl gestohlen h | PA | TXFDV
hide hides hid hidden | verstecken versteckt versteckte versteckt h | PA | TXFA
protect protects protected protected | schützen schützt schützte geschützt h | PO | PAL
destroy destroys destroyed destroyed | zerstören zerstört zerstörte zerstört h | PAO | TLVSX
fetch fetches fetched fetched | holen holt holte geholt h | PA | TXFD
use uses used used | benutzen benutzt benutzte benutzt h | PO | TV
count counts counted counted | zählen zählt zählte gezählt h | P | TAF
understand understands understood understood | verstehen versteht verstand verstanden h | P | PXB
know knows knew known | kennen kennt kannte gekannt h | P | PLXA
describe describes described described | beschreiben beschreibt beschrieb beschrieben h | P | PATLV
ask asks asked asked | fragen fragt fragte gefragt h | P | P
call calls called called | an+rufen ruft rief angerufen h | PO | PO
collect collects collected collected | ab+holen holt holte abgeholt h | P | P
invite invites invited invited | ein+laden lädt lud eingeladen h | PO | PO
recognize recognizes recognized recognized | erkennen erkennt erkannte erkannt h | PA | PA
accept accepts accepted accepted | an+nehmen nimmt nahm angenommen h | PO | BX
reject rejects rejected rejected | ab+lehnen lehnt lehnte abgelehnt h | PO | BX
watch watches watched watched | beobachten beobachtet beobachtete beobachtet h | PA | PA
cancel cancels canceled canceled | ab+sagen sagt sagte abgesagt h | PO | E
announce announces announced announced | an+kündigen kündigt kündigte angekündigt h | PO | EB
prepare prepares prepared prepared | vor+bereiten bereitet bereitete vorbereitet h | PO | EF
borrow borrows borrowed borrowed | aus+leihen leiht lieh ausgeliehen h | P | TXV
choose chooses chose chosen | wählen wählt wählte gewählt h | PO | PTXFB
organize organizes organized organized | organisieren organisiert organisierte organisiert h | PO | E
plan plans planned planned | planen plant plante geplant h | PO | EB
finance finances financed financed | finanzieren finanziert finanzierte finanziert h | PO | EBL
examine examines examined examined | untersuchen untersucht untersuchte untersucht h | PO | PATXB
discuss discusses discussed discussed | besprechen bespricht besprach besprochen h | PO | BX
kiss kisses kissed kissed | küssen küsst küsste geküsst h | P | PA
hug hugs hugged hugged | umarmen umarmt umarmte umarmt h | P | PA
greet greets greeted greeted | begrüßen begrüßt begrüßte begrüßt h | PO | P
bite bites bit bitten | beißen beißt biss gebissen h | A | PA
kick kicks kicked kicked | treten tritt trat getreten h | PA | T
push pushes pushed pushed | schieben schiebt schob geschoben h | PA | TV
pull pulls pulled pulled | ziehen zieht zog gezogen h | PA | TV
throw throws threw thrown | werfen wirft warf geworfen h | P | T | motion
fill fills filled filled | füllen füllt füllte gefüllt h | P | T
break breaks broke broken | zerbrechen zerbricht zerbrach zerbrochen h | PA | T
win wins won won | gewinnen gewinnt gewann gewonnen h | PO | E
celebrate celebrates celebrated celebrated | feiern feiert feierte gefeiert h | PO | E
study studies studied studied | studieren studiert studierte studiert h | P | XB
translate translates translated translated | übersetzen übersetzt übersetzte übersetzt h | P | X
arrest arrests arrested arrested | verhaften verhaftet verhaftete verhaftet h | PO | P
rescue rescues rescued rescued | retten rettet rettete gerettet h | PAO | PA
wake wakes woke woken | wecken weckt weckte geweckt h | PA | PA
admire admires admired admired | bewundern bewundert bewunderte bewundert h | P | PAL
ignore ignores ignored ignored | ignorieren ignoriert ignorierte ignoriert h | PAO | PAB
fear fears feared feared | fürchten fürchtet fürchtete gefürchtet h | PA | PA
expect expects expected expected | erwarten erwartet erwartete erwartet h | PO | PEX
"""

DATIVE = """
help helps helped helped | helfen hilft half geholfen h | PAO | PAO
thank thanks thanked thanked | danken dankt dankte gedankt h | PO | PO
follow follows followed followed | folgen folgt folgte gefolgt s | PA | PAV
trust trusts trusted trusted | vertrauen vertraut vertraute vertraut h | PO | PO
answer answers answered answered | antworten antwortet antwortete geantwortet h | PO | PO
congratulate congratulates congratulated congratulated | gratulieren gratuliert gratulierte gratuliert h | PO | PO
obey obeys obeyed obeyed | gehorchen gehorcht gehorchte gehorcht h | PA | PO
encounter encounters encountered encountered | begegnen begegnet begegnete begegnet s | PA | PA
contradict contradicts contradicted contradicted | widersprechen widerspricht widersprach widersprochen h | PO | PO
threaten threatens threatened threatened | drohen droht drohte gedroht h | PAO | PAO
forgive forgives forgave forgiven | verzeihen verzeiht verzieh verziehen h | P | P
"""

# ditransitive: "... | subj | obj | iobj [| to]" ; "to": English needs "to" (no double object)
DITRANSITIVE = """
give gives gave given | geben gibt gab gegeben h | PO | TXFDB | PAO
show shows showed shown | zeigen zeigt zeigte gezeigt h | PO | PATXLV | PO
send sends sent sent | schicken schickt schickte geschickt h | PO | TXF | PO
sell sells sold sold | verkaufen verkauft verkaufte verkauft h | PO | ATXFV | PO
offer offers offered offered | an+bieten bietet bot angeboten h | PO | TXFDB | PAO
bring brings brought brought | bringen bringt brachte gebracht h | PA | TXFD | PAO
lend lends lent lent | leihen leiht lieh geliehen h | PO | TXV | PO
write writes wrote written | schreiben schreibt schrieb geschrieben h | PO | X | PO
tell tells told told | erzählen erzählt erzählte erzählt h | P | Y | P
read reads read read | vor+lesen liest las vorgelesen h | P | X | P
promise promises promised promised | versprechen verspricht versprach versprochen h | PO | TFV | PO
hand hands handed handed | reichen reicht reichte gereicht h | P | TXFD | P
throw throws threw thrown | zu+werfen wirft warf zugeworfen h | P | T | PA
serve serves served served | servieren serviert servierte serviert h | P | FD | P
return returns returned returned | zurück+geben gibt gab zurückgegeben h | PO | TXV | PO | to
explain explains explained explained | erklären erklärt erklärte erklärt h | PO | B | PO | to
recommend recommends recommended recommended | empfehlen empfiehlt empfahl empfohlen h | PO | TXFDLB | PO | to
deliver delivers delivered delivered | liefern liefert lieferte geliefert h | PO | TXFD | PO | to
introduce introduces introduced introduced | vor+stellen stellt stellte vorgestellt h | PO | PB | PO | to
donate donates donated donated | spenden spendet spendete gespendet h | PO | TFV | O | to
"""

INTRANSITIVE = """
sleep sleeps slept slept | schlafen schläft schlief geschlafen h | PA
laugh laughs laughed laughed | lachen lacht lachte gelacht h | P
work works worked worked | arbeiten arbeitet arbeitete gearbeitet h | P
wait waits waited waited | warten wartet wartete gewartet h | PA
cry cries cried cried | weinen weint weinte geweint h | P
sing sings sang sung | singen singt sang gesungen h | PA
dance dances danced danced | tanzen tanzt tanzte getanzt h | P
swim swims swam swum | schwimmen schwimmt schwamm geschwommen s | PA | motion
run runs ran run | laufen läuft lief gelaufen s | PA | motion
go goes went gone | gehen geht ging gegangen s | PA | motion
come comes came come | kommen kommt kam gekommen s | PA | motion
arrive arrives arrived arrived | an+kommen kommt kam angekommen s | P
depart departs departed departed | ab+fahren fährt fuhr abgefahren s | P
fly flies flew flown | fliegen fliegt flog geflogen s | PA | motion
drive drives drove driven | fahren fährt fuhr gefahren s | P | motion
travel travels traveled traveled | reisen reist reiste gereist s | P | motion
fall falls fell fallen | fallen fällt fiel gefallen s | PAT | motion
grow grows grew grown | wachsen wächst wuchs gewachsen s | PA
live lives lived lived | wohnen wohnt wohnte gewohnt h | P
stay stays stayed stayed | bleiben bleibt blieb geblieben s | PA
sit sits sat sat | sitzen sitzt saß gesessen h | PA
stand stands stood stood | stehen steht stand gestanden h | PA
lie lies lay lain | liegen liegt lag gelegen h | PATXV
play plays played played | spielen spielt spielte gespielt h | PA
talk talks talked talked | reden redet redete geredet h | P
smile smiles smiled smiled | lächeln lächelt lächelte gelächelt h | P
disappear disappears disappeared disappeared | verschwinden verschwindet verschwand verschwunden s | PATXV
appear appears appeared appeared | erscheinen erscheint erschien erschienen s | PAX
return returns returned returned | zurück+kehren kehrt kehrte zurückgekehrt s | PA
climb climbs climbed climbed | klettern klettert kletterte geklettert s | PA | motion
jump jumps jumped jumped | springen springt sprang gesprungen s | PA | motion
hike hikes hiked hiked | wandern wandert wanderte gewandert s | P | motion
bark barks barked barked | bellen bellt bellte gebellt h | A
shout shouts shouted shouted | schreien schreit schrie geschrien h | P
cough coughs coughed coughed | husten hustet hustete gehustet h | P
hesitate hesitates hesitated hesitated | zögern zögert zögerte gezögert h | P
fail fails failed failed | scheitern scheitert scheiterte gescheitert s | PO
win wins won won | gewinnen gewinnt gewann gewonnen h | PO
sneeze sneezes sneezed sneezed | niesen niest nieste geniest h | P
whistle whistles whistled whistled | pfeifen pfeift pfiff gepfiffen h | P
snore snores snored snored | schnarchen schnarcht schnarchte geschnarcht h | PA
pray prays prayed prayed | beten betet betete gebetet h | P
"""

CCOMP = """
say says said said | sagen sagt sagte gesagt h | PO
know knows knew known | wissen weiß wusste gewusst h | PO
think thinks thought thought | denken denkt dachte gedacht h | P
believe believes believed believed | glauben glaubt glaubte geglaubt h | PO
hope hopes hoped hoped | hoffen hofft hoffte gehofft h | PO
hear hears heard heard | hören hört hörte gehört h | P
notice notices noticed noticed | bemerken bemerkt bemerkte bemerkt h | PO
forget forgets forgot forgotten | vergessen vergisst vergaß vergessen h | P
claim claims claimed claimed | behaupten behauptet behauptete behauptet h | PO
report reports reported reported | berichten berichtet berichtete berichtet h | PO
fear fears feared feared | fürchten fürchtet fürchtete gefürchtet h | PO
dream dreams dreamed dreamed | träumen träumt träumte geträumt h | P
suspect suspects suspected suspected | vermuten vermutet vermutete vermutet h | PO
admit admits admitted admitted | zu+geben gibt gab zugegeben h | PO
announce announces announced announced | an+kündigen kündigt kündigte angekündigt h | PO
confirm confirms confirmed confirmed | bestätigen bestätigt bestätigte bestätigt h | PO
deny denies denied denied | bestreiten bestreitet bestritt bestritten h | PO
explain explains explained explained | erklären erklärt erklärte erklärt h | PO
promise promises promised promised | versprechen verspricht versprach versprochen h | PO
learn learns learned learned | erfahren erfährt erfuhr erfahren h | PO
assume assumes assumed assumed | an+nehmen nimmt nahm angenommen h | PO
understand understands understood understood | verstehen versteht verstand verstanden h | P
"""

# adjectives: "en | de [stem] | classes"   (classes: A animate, I inanimate, * any)
ADJECTIVES = """
big | groß | *
small | klein | *
old | alt | *
young | jung | A
new | neu | I
beautiful | schön | *
ugly | hässlich | *
strange | seltsam | *
famous | berühmt | *
good | gut | *
bad | schlecht | *
wonderful | wunderbar | *
rich | reich | A
poor | arm | A
strong | stark | *
weak | schwach | *
short | kurz | I
long | lang | I
fat | dick | *
thin | dünn | *
heavy | schwer | *
dark | dunkel dunkl | I
bright | hell | I
clean | sauber | *
dirty | schmutzig | *
wet | nass | *
dry | trocken | *
warm | warm | I
cold | kalt | I
hot | heiß | I
cheap | billig | I
expensive | teuer teur | I
empty | leer | I
full | voll | I
broken | kaputt | I
red | rot | *
blue | blau | I
green | grün | I
yellow | gelb | I
black | schwarz | *
white | weiß | *
brown | braun | *
gray | grau | *
colorful | bunt | I
tired | müde | A
happy | glücklich | A
sad | traurig | A
hungry | hungrig | A
thirsty | durstig | A
angry | wütend | A
friendly | freundlich | A
clever | klug | A
stupid | dumm | A
lazy | faul | A
brave | mutig | A
shy | schüchtern | A
proud | stolz | A
nervous | nervös | A
curious | neugierig | A
polite | höflich | A
rude | unhöflich | A
honest | ehrlich | A
sick | krank | A
healthy | gesund | A
lonely | einsam | A
busy | beschäftigt | A
quiet | ruhig | *
loud | laut | *
wild | wild | A
tame | zahm | A
dangerous | gefährlich | *
poisonous | giftig | *
important | wichtig | *
interesting | interessant | *
boring | langweilig | *
difficult | schwierig | *
easy | einfach | I
secret | geheim | I
modern | modern | I
ancient | uralt | I
wooden | hölzern | I
golden | golden | I
fresh | frisch | I
delicious | lecker | I
sweet | süß | I
sour | sauer saur | I
bitter | bitter | I
salty | salzig | I
spicy | scharf | I
soft | weich | *
hard | hart | I
round | rund | I
flat | flach | I
narrow | schmal | I
wide | breit | I
deep | tief | I
high | hoch hoh | I
low | niedrig | I
cozy | gemütlich | I
huge | riesig | *
tiny | winzig | *
mysterious | geheimnisvoll | *
invisible | unsichtbar | *
magical | magisch | *
elegant | elegant | *
complicated | kompliziert | I
official | offiziell | I
public | öffentlich | I
private | privat | I
international | international | I
foreign | ausländisch | *
successful | erfolgreich | *
unknown | unbekannt | *
popular | beliebt | *
generous | großzügig | A
strict | streng | A
kind | nett | A
careful | vorsichtig | A
careless | leichtsinnig | A
grateful | dankbar | A
jealous | eifersüchtig | A
sleepy | schläfrig | A
clumsy | ungeschickt | A
fast | schnell | *
slow | langsam | *
unusual | ungewöhnlich | *
useful | nützlich | I
useless | nutzlos | I
excellent | ausgezeichnet | *
urgent | dringend | I
"""

# adjectives not used predicatively (German would say "aus Holz", "aus Gold")
ATTRIBUTIVE_ONLY = ("wooden", "golden")

MANNER_ADVERBS = """
quickly | schnell
slowly | langsam
carefully | sorgfältig
quietly | leise
loudly | laut
happily | fröhlich
secretly | heimlich
gladly | gern
patiently | geduldig
proudly | stolz
calmly | ruhig
politely | höflich
angrily | wütend
nervously | nervös
eagerly | eifrig
reluctantly | widerwillig
immediately | sofort
thoroughly | gründlich
well | gut
badly | schlecht
"""

# simple time adverbs: "en | de | upos xpos deprel | tenses | front(y/n)"
TIME_ADVERBS = """
yesterday | gestern | NOUN NN obl:tmod | past | y
today | heute | NOUN NN obl:tmod | pres past perf fut can must | y
tomorrow | morgen | NOUN NN obl:tmod | pres fut can must | y
now | jetzt | ADV RB advmod | pres perf can must | y
later | später | ADV RB advmod | past fut can must | y
soon | bald | ADV RB advmod | pres fut can must | y
often | oft | ADV RB advmod | pres past perf | y
sometimes | manchmal | ADV RB advmod | pres past perf | y
recently | kürzlich | ADV RB advmod | past perf | y
again | wieder | ADV RB advmod | pres past perf fut can must | n
usually | normalerweise | ADV RB advmod | pres past | y
finally | endlich | ADV RB advmod | past perf | y
suddenly | plötzlich | ADV RB advmod | past | y
"""

# nouns of time expressions (last week -> letzte Woche; every day -> jeden Tag)
TIME_NOUNS = """
week | Woche f
month | Monat m
year | Jahr n
summer | Sommer m
winter | Winter m
weekend | Wochenende n
day | Tag m
morning | Morgen m
evening | Abend m
"""

DAYS = """
Monday | Montag
Tuesday | Dienstag
Wednesday | Mittwoch
Thursday | Donnerstag
Friday | Freitag
Saturday | Samstag
Sunday | Sonntag
"""

# prepositions: "en | de | case | object classes | kind"
PREPOSITIONS = """
in | in | dat | L | loc
on | auf | dat | S | loc
under | unter | dat | S | loc
behind | hinter | dat | LSV | loc
into | in | acc | L | dir
onto | auf | acc | S | dir
to | zu | dat | PLO | dir
through | durch | acc | L | dir
around | um | acc | LS | dir
with | mit | dat | PAT | com
without | ohne | acc | PAT | com
for | für | acc | PAO | com
from | von | dat | PLO | com
after | nach | dat | E | temp
before | vor | dat | E | temp
during | während | gen | E | temp
of | - | gen | PATXLVOEB | gen
"""

# subordinating conjunctions: "en | de | tenses of the subordinate clause"
SUBORDINATORS = """
because | weil | pres past perf fut can must
although | obwohl | pres past perf fut can must
when | wenn/als | pres past
while | während | pres past
before | bevor | pres past
until | bis | pres past
if | wenn | pres perf can must
"""

NUMERALS = """
two | zwei
three | drei
four | vier
five | fünf
six | sechs
seven | sieben
ten | zehn
twelve | zwölf
"""

COORDINATORS = {"and": "und", "or": "oder", "but": "aber"}


# --------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------


def _lines(block: str) -> List[List[str]]:
    return [[f.strip() for f in line.split("|")] for line in block.strip().splitlines() if line.strip()]


def _parse_noun(fields: List[str]) -> Noun:
    en, en_pl = fields[0].split()
    de, de_pl, gender = fields[1].split()
    classes = fields[2]
    extra = {}
    for f in fields[3:]:
        k, _, v = f.partition("=")
        extra[k] = v or True
    weak = extra.get("weak")
    if weak is True:
        weak = de + ("n" if de.endswith("e") else "en")
    mods: Tuple = ()
    if "_" in en:
        *mod_words, en = en.split("_")
        en_pl = en_pl.split("_")[-1]
        mods = tuple((w, "NOUN", "NN", "compound", None) for w in mod_words)
    return Noun(en, en_pl, de, de_pl, gender, classes, weak=weak, gen=extra.get("gen"),
                en_mods=mods, is_head="head" in extra)


def _parse_verb(frame: str, fields: List[str]) -> Verb:
    en = fields[0].split()
    de_inf, de_3sg, de_past, de_pp, aux = fields[1].split()
    prefix = ""
    if "+" in de_inf:
        prefix, de_inf = de_inf.split("+")
    flags = set(fields[3:]) if frame in ("intr", "ccomp") else set(fields[4:])
    kw = dict(subj=fields[2], motion="motion" in flags)
    if frame in ("tr", "dat", "ditr"):
        kw["obj"] = fields[3]
    if frame == "ditr":
        kw["iobj"] = fields[4]
        kw["dbl"] = "to" not in set(fields[5:])
        kw["motion"] = False
    return Verb(frame, *en, de_inf, de_3sg, de_past, de_pp, "haben" if aux == "h" else "sein",
                prefix=prefix, **kw)


@dataclass(eq=False)
class Lexicon:
    """All lexical data, indexed by English key.

    ``verbs`` maps a frame to ``{english base: Verb}``; ``nouns`` maps an English
    key (``"man"``, ``"town hall"``) to a :class:`Noun`; compounds are built by
    :meth:`compound` (and are cached).
    """

    nouns: Dict[str, Noun]
    names: Dict[str, Name]
    verbs: Dict[str, Dict[str, Verb]]
    adjectives: Dict[str, Adjective]
    adverbs: Dict[str, Adverb]
    times: Dict[str, TimeExpr]
    preps: Dict[str, Prep]
    determiners: Dict[str, Determiner]
    modifiers: Dict[str, str]  # english compound modifier -> German combining form
    prefix_adjectives: Dict[str, str]
    subordinators: Dict[str, Tuple[str, Tuple[str, ...]]]
    copula: Verb
    _compounds: Dict[Tuple[str, str, str], Noun] = field(default_factory=dict)

    def compound(self, head: str, modifier: str, prefix_adj: str = "") -> Noun:
        """Build (or fetch) the compound ``[prefix_adj] modifier head``.

        Example: ``compound("company", "liability insurance")`` is English
        ``liability insurance company`` / German ``Haftpflichtversicherungsgesellschaft``.
        """
        k = (head, modifier, prefix_adj)
        n = self._compounds.get(k)
        if n is not None:
            return n
        h = self.nouns[head]
        de_prefix = (self.prefix_adjectives[prefix_adj] if prefix_adj else "") + self.modifiers[modifier]
        de_prefix = de_prefix[0] + de_prefix[1:].lower() if prefix_adj else de_prefix
        mods: List[Tuple[str, str, str, str, Optional[int]]] = []
        if prefix_adj:
            mods.append((prefix_adj, "ADJ", "JJ", "amod", None))
        words = modifier.split()
        base = len(mods)
        for i, w in enumerate(words):
            # nested compounds: each modifier word modifies the next one
            mods.append((w, "NOUN", "NN", "compound", base + i + 1 if i + 1 < len(words) else None))

        def glue(form):
            return de_prefix + form.lower() if form else form

        n = Noun(h.en, h.en_pl, glue(h.de), glue(h.de_pl), h.gender, h.classes,
                 weak=glue(h.weak), gen=glue(h.gen or genitive_singular(h.de)) if h.gender in "mn" else None,
                 en_mods=tuple(mods), is_head=False)
        self._compounds[k] = n
        return n

    @property
    def compound_heads(self) -> List[str]:
        return [k for k, n in self.nouns.items() if n.is_head]

    def stats(self) -> Dict[str, int]:
        """Sizes of the lexicon (for the README and reports)."""
        heads = len(self.compound_heads)
        return {
            "nouns": len(self.nouns),
            "compound_heads": heads,
            "compound_modifiers": len(self.modifiers),
            "prefix_adjectives": len(self.prefix_adjectives),
            "possible_compounds": heads * len(self.modifiers) * (1 + len(self.prefix_adjectives)),
            "names": len(self.names),
            "verbs": len({v.en_base for d in self.verbs.values() for v in d.values()}),
            "verb_frames": sum(len(d) for d in self.verbs.values()),
            "adjectives": len(self.adjectives),
            "manner_adverbs": len(self.adverbs),
            "time_expressions": len(self.times),
            "prepositions": len(self.preps),
        }


def _build_times() -> Dict[str, TimeExpr]:
    times: Dict[str, TimeExpr] = {}
    for en, de, tags, tenses, front in _lines(TIME_ADVERBS):
        upos, xpos, dep = tags.split()
        times[en] = TimeExpr(en, ((en, upos, xpos, dep, None),), (de,), tuple(tenses.split()), front == "y")
    strong_acc = {"m": "en", "f": "e", "n": "es"}
    for en, rest in _lines(TIME_NOUNS):
        de, g = rest.split()
        specs = [("last", "ADJ", "JJ", "amod", "letzt", ("past",)),
                 ("next", "ADJ", "JJ", "amod", "nächst", ("pres", "fut", "can", "must")),
                 ("every", "DET", "DT", "det", "jed", ("pres", "past", "perf"))]
        for det, upos, xpos, dep, stem, tenses in specs:
            if det != "every" and en in ("day", "morning", "evening"):
                continue  # "last day"/"next morning" mean something else
            key = f"{det} {en}"
            times[key] = TimeExpr(key, ((det, upos, xpos, dep, 1), (en, "NOUN", "NN", "obl:tmod", None)),
                                  (stem + strong_acc[g], de), tenses)
    for en, de in _lines(DAYS):
        key = f"on {en}"
        times[key] = TimeExpr(key, (("on", "ADP", "IN", "case", 1), (en, "PROPN", "NNP", "obl", None)),
                              ("am", de), ("pres", "past", "fut", "can", "must"))
    return times


def _build_determiners() -> Dict[str, Determiner]:
    d = {
        "the": Determiner("the", "the", "DET", "DT", "det", "def", "", "sgpl"),
        "a": Determiner("a", "a", "DET", "DT", "det", "ein", "ein", "sg"),
        "this": Determiner("this", "this", "DET", "DT", "det", "der", "dies", "sg"),
        "these": Determiner("these", "these", "DET", "DT", "det", "der", "dies", "pl"),
        "every": Determiner("every", "every", "DET", "DT", "det", "der", "jed", "sg"),
        "no": Determiner("no", "no", "DET", "DT", "det", "ein", "kein", "sgpl"),
        "my": Determiner("my", "my", "PRON", "PRP$", "nmod:poss", "ein", "mein", "sgpl"),
        "our": Determiner("our", "our", "PRON", "PRP$", "nmod:poss", "ein", "unser", "sgpl"),
    }
    for en, de in _lines(NUMERALS):
        d[en] = Determiner(en, en, "NUM", "CD", "nummod", "num", de, "pl")
    return d


@lru_cache(maxsize=None)
def load_lexicon() -> Lexicon:
    """Parse the lexicon data (cached; the returned object is shared)."""
    nouns = {}
    for f in _lines(NOUNS):
        n = _parse_noun(f)
        if n.key in nouns:
            raise ValueError(f"duplicate noun {n.key!r}")
        nouns[n.key] = n
    verbs: Dict[str, Dict[str, Verb]] = {}
    for frame, block in (("tr", TRANSITIVE), ("dat", DATIVE), ("ditr", DITRANSITIVE),
                         ("intr", INTRANSITIVE), ("ccomp", CCOMP)):
        verbs[frame] = {}
        for f in _lines(block):
            v = _parse_verb(frame, f)
            if v.key in verbs[frame]:
                raise ValueError(f"duplicate verb {v.key!r} in frame {frame}")
            verbs[frame][v.key] = v
    adjs = {}
    for en, de, classes in _lines(ADJECTIVES):
        parts = de.split()
        adjs[en] = Adjective(en, parts[0], parts[-1], classes)
    copula = Verb("cop", "be", "is", "was", "been", "sein", "ist", "war", "gewesen", "sein", subj="PAOTXFLVSEB")
    return Lexicon(
        nouns=nouns,
        names={f[0].split()[0]: Name(*f[0].split()) for f in _lines(NAMES)},
        verbs=verbs,
        adjectives=adjs,
        adverbs={en: Adverb(en, de) for en, de in _lines(MANNER_ADVERBS)},
        times=_build_times(),
        preps={f[0]: Prep(f[0], f[1], f[2], f[3], f[4], "TO" if f[0] == "to" else "IN") for f in _lines(PREPOSITIONS)},
        determiners=_build_determiners(),
        modifiers={en: de for en, de in _lines(COMPOUND_MODIFIERS)},
        prefix_adjectives={en: de for en, de in _lines(PREFIX_ADJECTIVES)},
        subordinators={en: (de, tuple(t.split())) for en, de, t in _lines(SUBORDINATORS)},
        copula=copula,
    )
