"""What one short statement claims, read by rules (English and Chinese): the relation rules' input.

A `Claim` splits a statement into its **subject** (who or what it is about: the words
before its verb, the speaker for "I ..." / ``我...``), its **frame** (the other content
words: which attribute it speaks of), its **values** (numbers, dates, times, names other
than the subject), its **polarity** (a negation, or the negative one of a pair such as
open / closed), and the cues around a change:

* a **change cue** ("moved to", "switched to", ``改为``, ``搬到``, ``换了``): the new
  statement gives a new value of something said before;
* a **final cue** ("postponed", "cancelled", "cut", "no longer", ``延期``, ``取消``,
  ``削减``, ``不再``): the old value no longer holds, even when no new one is given;
* a **current cue** ("now", "these days", ``现在``): what follows holds from now on;
* an **additive cue** ("too", "also", "another", ``也``, ``还``): one more value, not
  another one (``Ana speaks Spanish too`` keeps ``Ana speaks French``);
* an **event**: a past action ("visited Rome in 2019"), of which there can be many.

Reason clauses ("after the compliance review", ``因合规审查，``) are left out: they say
why, not what.

Examples:
    >>> claim = read_claim("The project launch was postponed to 2024-07-10 after the review.")
    >>> sorted(claim.subject or ()), claim.final, sorted(claim.values)
    (['launch', 'project'], True, ['2024-07-10'])
    >>> zh = read_claim("因合规审查，项目上线延期至2024-07-10")
    >>> zh.chinese, zh.final, sorted(zh.values), zh.subject
    (True, True, ['2024-07-10'], frozenset({'项目'}))
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from memtrellis.store.graph import normalize_subject

__all__ = ["SINGLE_VALUED", "VALUE_CLASSES", "Claim", "class_of", "read_claim"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

# Words that name one attribute in several ways ("lives in" / "moved to"); a shared class
# lets two wordings of one attribute meet.
_CLASSES = {
    "residence": "live lives living lived moved relocate relocated based home reside resides "
    "address flat apartment house",
    "work": "job jobs employed unemployed employer hired hire "
    "position role occupation career shift joined intern engineer manager nurse teacher "
    "doctor developer designer analyst barista chef cook driver lawyer accountant consultant",
    "relationship": "married engaged dating divorced partner wife husband boyfriend girlfriend",
    "preference": "like likes liked love loves loved prefer prefers preferred favourite "
    "favorite hate hates dislike dislikes enjoy enjoys fond",
    "schedule": "due deadline scheduled schedule date time rescheduled postponed delayed "
    "set planned",
    "contact": "phone email number mobile contact line reach reachable dial",
    "decision": "decided decide decision chose choose chosen picked plan plans planned",
    "status": "open opened closed pending approved rejected merged shipped delivered resolved "
    "completed finished paid unpaid active inactive frozen unfrozen enabled disabled engaged "
    "married divorced separated widowed",
    "age": "age old born birthday",
}
_ZH_CLASSES = {
    "residence": "住 搬 家在 迁 老家",
    "work": "工作 上班 就职 任职 跳槽 辞职 离职 入职 转行 老师 工程师 经理 会计 销售",
    "status": "冻结 解冻 开启 关闭 付款 发货 通过 批准",
    "preference": "喜欢 爱 讨厌 最爱",
    "schedule": "截止 会议 开会 日期 时间 定在 安排",
    "contact": "手机 电话 号码 邮箱 微信",
    "age": "岁 生日",
}
#: Attribute classes a subject has one value of at a time: a new value replaces the old.
SINGLE_VALUED = frozenset(
    {"residence", "work", "relationship", "schedule", "contact", "age", "status"}
)
#: Classes whose words are the values themselves ("open" / "merged", "engaged" / "married").
VALUE_CLASSES = frozenset({"status"})
_CLASS_OF: dict[str, set[str]] = {}
for _name, _words in _CLASSES.items():
    for _word in _words.split():
        _CLASS_OF.setdefault(_word, set()).add(_name)

# Words that own what a verb acts on ("cut the budget", "raised its prices").
_OWN = r"(?:to|by|the|a|an|my|his|her|their|our|its|your)"
_FINAL_EN = re.compile(
    r"\b(postponed?|delayed|pushed (?:\w+ ){0,4}?(?:back|out|to)|slipped|rescheduled|"
    r"(?:been|was|were|got) extended|extended (?:to|until|till|by)|"
    r"gave (?:\w+ ){0,2}until|(?:is|are|was|were|went|got|came) (?:down|up) to|"
    r"cancell?ed|called off|scrapped|abandoned|gave up|give up|quit|stopped(?! by)|"
    r"no longer|no more|not any ?more|any ?more|backed out|pulled out|withdrew|reversed|"
    r"overturned|sold|closed down|shut down|discontinued|increased|decreased|reduced|lowered|"
    r"doubled|tripled|halved|went (?:up|down)|upgraded|downgraded|promoted|demoted|laid off|"
    r"resigned|divorced|broke up|renamed|replaced|swapped|traded in|took over|"
    rf"(?:dropped|raised|cut|slashed|fell|rose) {_OWN}|(?:been|was|were|got) (?:cut|dropped|"
    r"raised|slashed)|fired(?! up)|handed (?:over|off|(?:\w+ ){1,4}?to)|(?:has|have|had) ended|"
    r"left (?:my|his|her|their|our|the) (?:job|company|firm|team|position|role)|correction|"
    r"changed (?:my|his|her|their|our) minds?|decided (?:not to|against)|got a raise)\b",
    re.IGNORECASE,
)
_CHANGE_EN = re.compile(
    r"\b((?:moved|moving) (?:\w+ ){0,3}?(?:to|into|back|out|in|house|away|abroad)|relocated|"
    r"changed|switched|"
    r"instead|took a job|got a job|got hired|"
    r"hired by|transferred|updated?|started (?:a new job|working (?:at|for|as)|as an?)|"
    # "new" of a thing one has one of ("my new number"), not "new things", "a new group"
    r"new (?=(?:\w+ )?(?:job|number|phone|mobile|email|address|home|flat|apartment|house|"
    r"manager|boss|role|position|deadline|date|time|price|name|car|school|office|partner|"
    r"doctor|lead|landline|account)\b))",
    re.IGNORECASE,
)
_EMPLOYED = re.compile(r"\bwork(?:s|ed|ing)? (?:at|for|as)\b")
# Change verbs that need their object: a name ("joined PwC"), an occupation, an age.
_CHANGE_OBJECT_EN = re.compile(
    r"\b(?:joined|became|now works for)\s+(?:an? |the )?zzname"
    r"|\bbecame an? (?:[\w-]+ )?(?:" + _CLASSES["work"].replace(" ", "|") + r")\b|\bturned \d+"
)
# What before a cue makes it no change yet: an intention, a wish, a negation ("not to give
# up", "plans to cut", "thinking about quitting", "will cut").
_NOT_YET = re.compile(
    r"\b(?:to|not|never|n't|don't|won't|about|considering|might|may|could|would|should|will|"
    r"if)\s+$"
)
_CURRENT_EN = re.compile(
    r"\b(now|these days|nowadays|currently|at present|from now on|going forward|as of|"
    r"starting (?:today|now|next \w+))\b",
    re.IGNORECASE,
)
_ADDITIVE_EN = re.compile(
    r"\b(also|too|as well|another|additionally|besides|either|plus|other)\b",
    re.IGNORECASE,
)
_NEGATION_EN = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n't\b", re.IGNORECASE
)
_FINAL_ZH = re.compile(
    r"延期|推迟|延后|延迟|顺延|推后|延长|取消|放弃|不再|戒掉|戒了|戒|辞职|离职|辞去|停止|"
    r"撤销|叫停|涨|降价|降到|降低|降为|下降|上涨|上调|下调|提高|提升|增加|减少|削减|减为|"
    r"减到|缩减|翻倍|减半|扩建|升职|升为|晋升|卖掉|改期|更正|决定不|不打算|转行|解冻"
)
_CHANGE_ZH = re.compile(
    r"改为|改成|改到|改在|改用|调整为|调整到|调整|更改为|更改|更换|变更为|变更|变为|变成|"
    r"换成|换了|换到|搬到|搬去|搬来|搬家|搬|迁到|迁至|迁往|迁|跳槽|入职|加入|转到|转为|改"
    r"|(?<=[的了个位部份换])新|^新"
)
_CURRENT_ZH = re.compile(r"现在|如今|目前|现已|从今以后|今后")
_ADDITIVE_ZH = re.compile(r"也|还有|另外|另一|又|同时|还(?![没未在是])")
# Words holding 不 / 没 / 无 that are not negations ("good", "but", "different", ...).
_NOT_NEGATION_ZH = re.compile(r"不错|不过|不同|不少|不久|不仅|不但|不管|无论|非常|未来|别人|别的")
_NEGATION_ZH = re.compile(r"[不没沒未无無非别]")
_EVENT_ZH = re.compile(r"过|去年|昨天|昨晚|上周|上个月|前天")
# Pairs whose second word is the negative of the first: "closed" is "not open".
_ANTONYMS_EN = {
    "closed": "open",
    "shut": "open",
    "disabled": "enabled",
    "off": "on",
    "unpaid": "paid",
    "unavailable": "available",
    "inactive": "active",
    "single": "married",
    "dead": "alive",
    "absent": "present",
    "unlocked": "locked",
    "rejected": "accepted",
    "denied": "approved",
    "unemployed": "employed",
}
_ANTONYMS_ZH = {"关闭": "开启", "关了": "开启", "关着": "开启", "停业": "营业", "未付款": "付款"}
# Other words of the positive side, read as it ("开着" is "开启").
_POSITIVE_ZH = {"开着": "开启", "打开": "开启", "开了": "开启"}
_ANTONYM_ZH = re.compile(
    "|".join(sorted({*_ANTONYMS_ZH, *_ANTONYMS_ZH.values(), *_POSITIVE_ZH}, key=len)[::-1])
)
# A negation closed by 了 says that something stopped ("不去了": no longer going).
_STOPPED_ZH = re.compile(r"[不没][^，。！？,.!?]*了[。！？!?.]*$")

_MONTHS = """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec""".split()  # noqa: SIM905
_DAYS = """monday tuesday wednesday thursday friday saturday sunday tomorrow
    tonight""".split()  # noqa: SIM905
_NUMBER_WORDS = """zero one two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy
    eighty ninety hundred thousand million billion dozen half twice once first second third
    fourth fifth 1st 2nd 3rd am pm""".split()  # noqa: SIM905
_VALUE_WORDS = frozenset([*_MONTHS, *_DAYS, *_NUMBER_WORDS])
_NUMBER = re.compile(
    r"[$€£¥]?\d+(?:[.,:/-]\d+)*(?:st|nd|rd|th|k|m|%|am|pm)?|\S+@\S+\.\w+", re.IGNORECASE
)
_ZH_NUMBER = re.compile(
    r"[$€£¥]?\d+(?:[.,:/-]\d+)*%?|[零〇一二两三四五六七八九十百千万亿半]+"
    r"|大后天|后天|明天|今天|昨天|前天|今晚|明晚|昨晚|本周|下周|上周|下个月|上个月|明年|去年|今年"
)
_ASCII_RUN = re.compile(r"[A-Za-z][A-Za-z0-9_.@+-]*")
_WORD = re.compile(r"[a-z0-9$€£¥][\w'’.,@$%/:-]*[\w%]|[a-z0-9]", re.IGNORECASE)

_STOP_EN = frozenset(
    """a an the is are was were be been being am 'm 's 're 've 'd 'll i me my mine we us our
    ours you your yours he him his she her hers it its they them their theirs this that these
    those there here to of in on at for by with from into onto about over under up out off
    per and or but so if then than just very really quite around approximately roughly about
    until till will would shall should can could may might must do does did done has have had
    having get gets got getting some any all every each still only usually often always mostly
    recently finally already again also too now who which what where when how one ones
    going gonna lot lots a.m p.m im ive""".split()  # noqa: SIM905 - reads as text
)
# Words that name which attribute a value is of rather than whose: "the launch date" is
# "the launch", "a new email address" an email, "the subscription price" the subscription.
_ATTRIBUTE_NOUNS = frozenset(
    """date day time hour number phone mobile email e-mail address contact reach call mail
    amount total figure count value price cost fee rate deadline target level size limit
    status""".split()  # noqa: SIM905 - reads as text
)
# Tokens after which the subject phrase stops: auxiliaries, modals, adverbs of the verb.
_VERBISH = frozenset(
    """is are was were am be been 'm 're 's has have had will would can could should shall
    may might must do does did don't doesn't didn't won't can't isn't aren't wasn't never not
    no just now also still recently finally already really only usually often always mostly
    currently then got gets""".split()  # noqa: SIM905 - reads as text
)
_DETERMINERS = frozenset(
    "the a an my our his her their your its this that these those".split()  # noqa: SIM905
)
_SPEAKER = frozenset("i i'm i've i'd i'll me we we're we've us".split())  # noqa: SIM905
_PRONOUNS = frozenset(
    "he she it they you he's she's it's they're you're someone".split()  # noqa: SIM905
)
_PAST_IRREGULAR = frozenset(
    """went met saw bought ate took made did gave won lost ran swam flew came spent began
    wrote drove sang threw told said heard found brought caught taught felt kept slept sent
    built drank""".split()  # noqa: SIM905 - reads as text
)
_STATE_PARTICIPLES = frozenset(
    """married engaged based employed unemployed retired interested located closed disabled
    enabled paid unpaid scheduled expected installed called named booked planned set allergic
    delayed postponed""".split()  # noqa: SIM905 - reads as text
)
_ZH_FUNCTION = re.compile(
    r"[的了是为在于到至将已经很都就把被着呢吗吧啊呀和与及并而且个位这那该其还"
    r"，。！？、：；“”‘’《》（）()!?,.;:\s]"
)
# What ends a Chinese topic: the copula or a verb of place, naming or having.
_ZH_PREDICATE = re.compile(r"是|为|叫|在|住|有|定于|将于")
_ZH_SPEAKER = re.compile(r"^(?:我们|我家|我的|我)")
_ZH_PRONOUN = re.compile(r"^(?:他们|她们|他的|她的|他|她|它)")
_REASON_LEAD = re.compile(
    r"^(?:after|because(?: of)?|since|due to|following|owing to|thanks to)\b[^,]*,\s*"
    r"|^(?:after|following|because of|due to)\s+(?:the\s+|a\s+|an\s+|my\s+|our\s+)?\w+"
    r"(?:\s+\w+)?\s+(?=(?:the|my|our|his|her|their|we|i|they|it)\b)",
    re.IGNORECASE,
)
_REASON_TAIL = re.compile(
    r"[,;]?\s+\b(?:after|because|since|due to|following|owing to|thanks to|so that)\b.*$",
    re.IGNORECASE,
)
_DISCOURSE = re.compile(
    r"^(?:correction|update|note|fyi|btw|actually|heads up|ok|okay|so|well|oh)\b[:,!.]?\s*",
    re.IGNORECASE,
)
# "Label: what is said" or "Thing: value": a short phrase before a colon.
_LABELLED = re.compile(r"^([^:.!?;]{1,48}?)\s*:\s+(?=\S)(.*)$", re.DOTALL)
_CLAUSE_WORD = re.compile(
    r"\b(?:is|are|was|were|am|has|have|had|will|can|got|gets|i|we|they|he|she|it|you|"
    r"\w+ed)\b|\w'(?:s|re|m|ve)\b",
    re.IGNORECASE,
)


def unlabel(text: str) -> str:
    """A statement without its lead-in: a discourse word ("Actually, ...", "Update: ..."),
    a label before a colon when it is no clause itself and a clause follows ("Hiring
    freeze: the target was lowered ..."); a colon before a bare value is read as "is"
    ("Payroll cutover: Nov 1.").

    Examples:
        >>> unlabel("Hiring freeze: the 2025 headcount target was lowered to 45.")
        'the 2025 headcount target was lowered to 45.'
        >>> unlabel("Contract renewal deadline: 30 April.")
        'Contract renewal deadline is 30 April.'
    """
    said = _DISCOURSE.sub("", text.strip())
    found = _LABELLED.match(said)
    if found is None or len(found.group(1).split()) > 6:
        return said
    head, rest = found.groups()
    if _CLAUSE_WORD.search(head) or _FINAL_EN.search(head) or _CHANGE_EN.search(head):
        return said  # a clause of its own: "We reversed the decision: ..."
    first = re.split(r"[,;]", rest, maxsplit=1)[0]
    if _CLAUSE_WORD.search(first):
        return rest
    return f"{head} is {rest}"


_ZH_REASON = re.compile(
    r"^(?:因为|由于|因)[^，,。]*[，,]|[，,](?:因为|由于)[^。]*$|(?:因为|由于)[^，,。改推延调]{1,6}(?=[改推延调])"
)


@dataclass(frozen=True)
class Claim:
    """What a statement claims, as the relation rules read it.

    Attributes:
        chinese: Read as Chinese (mostly CJK characters).
        subject: Who or what it is about (word stems, ``@speaker`` for the speaker);
            ``None`` when it opens with a pronoun ("they", ``他``) or says nothing of it.
        frame: The content units that say which attribute (stems, or CJK bigrams).
        classes: Attribute classes its words name (``residence``, ``work``, ...).
        values: Numbers, dates, times and names other than the subject.
        negated: Negative polarity (a negation, or "closed" of open / closed).
        final: A final cue: the old value no longer holds.
        change: A change cue: a new value of something said before.
        current: A current cue ("now").
        additive: An additive cue ("too", ``也``).
        event: A past action rather than a state.
        topic: Chinese only: the words before the predicate (``我的上司`` of
            ``我的上司是陈经理``), the speaker left out; ``None`` when there are none.

    Examples:
        >>> c = read_claim("Ana speaks Spanish too.", ["Ana", "Spanish"])
        >>> sorted(c.subject or ()), sorted(c.values), c.additive
        (['ana'], ['spanish'], True)
    """

    chinese: bool
    subject: frozenset[str] | None
    frame: frozenset[str]
    classes: frozenset[str]
    values: frozenset[str]
    negated: bool
    final: bool
    change: bool
    current: bool
    additive: bool
    event: bool
    topic: str | None = None
    classed: frozenset[tuple[str, str]] = frozenset()
    cue: str = ""

    def core(self, classes: frozenset[str]) -> frozenset[str]:
        """The frame without ``classes``' words and class units: the rest of the slot.

        Examples:
            >>> sorted(read_claim("My work email is a@b.example").core(frozenset({"contact"})))
            ['work']
        """
        drop = {stem for stem, name in self.classed if name in classes}
        return frozenset(
            u for u in self.frame if u not in drop and not (u[1:] in classes and u[0] == "@")
        )


def _stem(word: str) -> str:
    word = word.replace("’", "'").casefold()
    if word.endswith("'s"):
        word = word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2]:
                word = word[:-1]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


_ATTRIBUTE_STEMS = _ATTRIBUTE_NOUNS | {_stem(w) for w in _ATTRIBUTE_NOUNS}


def _cue_spans(
    text: str, patterns: Iterable[re.Pattern[str]], mark: str = "", *, guard: bool = False
) -> tuple[str, list[bool]]:
    """``text`` with the cues blanked out (``mark`` in their place), and which matched;
    with ``guard``, a cue after an intention or a negation ("not to give up") is none."""
    found: list[bool] = []
    for pattern in patterns:
        matched = False
        for match in pattern.finditer(text):
            if guard and _NOT_YET.search(text[max(0, match.start() - 16) : match.start()]):
                continue
            matched = True
            span = match.end() - match.start()
            blank = f" {mark} ".center(span) if mark and span >= len(mark) + 2 else " " * span
            text = text[: match.start()] + blank + text[match.end() :]
        found.append(matched)
    return text, found


def read_claim(text: str, entities: Iterable[str] = ()) -> Claim:
    """Read ``text`` (with its entity names, when known) as a `Claim`.

    Examples:
        >>> c = read_claim("I moved to Porto!", ["Porto"])
        >>> sorted(c.subject or ()), sorted(c.values), c.change, sorted(c.classes)
        (['@speaker'], ['porto'], True, ['residence'])
    """
    return _read(text, tuple(entities))


@functools.lru_cache(maxsize=8192)
def _read(text: str, entities: tuple[str, ...]) -> Claim:
    # Cached: a plan reads each stored candidate again for every new memory it compares.
    cjk = len(_CJK.findall(text))
    if cjk and cjk >= len(re.findall(r"[A-Za-z]", text)) / 3:
        return _read_chinese(text)
    return _read_english(text, [normalize_subject(e) for e in entities])


def _read_english(text: str, names: list[str]) -> Claim:
    stripped = text.strip()
    said = unlabel(stripped)
    correction = said != stripped and stripped[:10].casefold().startswith("correction")
    said = _REASON_TAIL.sub("", _REASON_LEAD.sub("", said))
    lowered = said.casefold().replace("\u2019", "'")
    blanked, (final, change, current, additive) = _cue_spans(
        lowered, (_FINAL_EN, _CHANGE_EN, _CURRENT_EN, _ADDITIVE_EN), _CUE, guard=True
    )
    negated = bool(_NEGATION_EN.search(lowered))
    said_cue = next(
        (
            m.group(0)
            for p in (_FINAL_EN, _CHANGE_EN, _CURRENT_EN)
            for m in [p.search(lowered)]
            if m
        ),
        "",
    )
    classes: set[str] = set()
    for word in _WORD.findall(lowered):
        classes |= _CLASS_OF.get(_stem_key(word), set())
    employed = bool(_EMPLOYED.search(lowered))  # "works at", "worked for": a job
    if employed:
        classes.add("work")
    # Names become placeholders, the longest first ("St Mary's" is one value).
    values: set[str] = set()
    lead: str | None = None
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        found = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", blanked)
        if found is None:
            continue
        at = found.start()
        if not blanked[:at].strip():
            lead = name
        else:
            values.add(name)
        blanked = blanked[:at] + " " + _NAME + " " + blanked[at + len(name) :]
    change = change or bool(_CHANGE_OBJECT_EN.search(blanked))
    tokens = [t.strip("'").rstrip(".") for t in _WORD.findall(blanked)]
    subject: set[str] | None = {lead} if lead else set()
    frame: set[str] = set()
    classed: set[tuple[str, str]] = set()
    in_subject, event = True, False
    for position, word in enumerate(tokens):
        if word == _CUE:
            in_subject = in_subject and position == 0
            continue
        if word.startswith(_NAME):
            continue
        if (
            word == "s"
            and position
            and tokens[position - 1].startswith(_NAME)
            and _possessive(tokens[position + 1 : position + 2])
        ):
            continue  # "Felix's company moved": the subject goes on
        if _NUMBER.fullmatch(word) or word in _VALUE_WORDS:
            value = word.replace(",", "").lstrip("$\u20ac\u00a3\u00a5")
            if in_subject and subject is not None and position + 1 < len(tokens):
                subject.add(value)  # "Release 4.2 ships", "a first note": which one
            else:
                values.add(value)
            continue
        if word in _ANTONYMS_EN:
            negated = not negated
            word = _ANTONYMS_EN[word]
        if in_subject and position > 0 and _verbish(word, tokens[position - 1]):
            in_subject = False
        elif in_subject and position == 1 and lead and tokens[0].startswith(_NAME):
            in_subject = False  # a name and its verb: "Amir became ...", "Rita works ..."
        elif position == 0 and not lead and (word in _IMPERATIVES or word in _VERB_CLASS_WORDS):
            subject, in_subject = None, False  # "Reach me at ...": no subject named
        if word in _PAST_IRREGULAR or (
            word.endswith("ed") and word not in _STATE_PARTICIPLES and word not in _CLASS_OF
        ):
            event = True
        if word in _SPEAKER or word in _PRONOUNS:
            if position == 0 and subject is not None:
                # "I run ...": the pronoun is the whole subject.
                subject = {"@speaker"} if word in _SPEAKER else None
                in_subject = False
            continue
        if (
            word in _STOP_EN
            or word.endswith("n't")
            or _NEGATION_EN.fullmatch(word)
            or len(word) < 2
        ):
            continue
        stem = _stem(word)
        if in_subject and subject is not None:
            subject.add(stem)
        frame.add(stem)
        frame.update("@" + c for c in _CLASS_OF.get(_stem_key(word), ()))
        if employed and stem == "work":
            frame.add("@work")
            classed.add((stem, "work"))
        classed.update((stem, c) for c in _CLASS_OF.get(_stem_key(word), ()))
    return Claim(
        chinese=False,
        subject=frozenset(subject) if subject else None,
        frame=frozenset(frame),
        classes=frozenset(classes),
        values=frozenset(values),
        negated=negated,
        final=final or correction,
        change=change,
        current=current,
        additive=additive,
        event=event,
        classed=frozenset(classed),
        cue=said_cue,
    )


_NAME = "zzname"
_CUE = "zzcue"
# Class words that are verbs: they end a subject phrase ("Ana lives ...").
_VERB_CLASS_WORDS = frozenset(
    """live lives living lived move moved moving relocate relocated reside resides stay stays
    work works worked working like likes liked love loves loved prefer prefers preferred hate
    hates dislike dislikes enjoy enjoys decided decide chose choose picked plan plans planned
    hired""".split()  # noqa: SIM905 - reads as text
)


# Verbs a text may open with, naming no subject ("Reach me at ...", "Contact Ines at ...").
_IMPERATIVES = frozenset("reach contact call text email message ping find".split())  # noqa: SIM905


# Words after a name's "'s" that make it "is" or "has" ("Dana's out sick", "Kai's a
# nurse", "Ana's been promoted"), not a possessive ("Felix's company").
_AFTER_IS = frozenset(
    """a an the not no never out in at on off now just also still been got going here there
    back away home over""".split()  # noqa: SIM905 - reads as text
)


def _possessive(after: list[str]) -> bool:
    """Whether a name's "'s" before ``after`` (the next token, if any) is a possessive."""
    if not after:
        return False
    word = after[0]
    return not (
        word in _AFTER_IS
        or word.endswith(("ed", "ing", "n't"))
        or bool(_NUMBER.fullmatch(word))
        or word in _VALUE_WORDS
        or word in _PAST_IRREGULAR
    )


def class_of(word: str) -> frozenset[str]:
    """The attribute classes a word names ("phone": ``contact``; ``residence`` of "moved").

    Examples:
        >>> sorted(class_of("phone")), sorted(class_of("Lives"))
        (['contact'], ['residence'])
    """
    return frozenset(_CLASS_OF.get(_stem_key(word), ()))


def _stem_key(word: str) -> str:
    word = word.strip("'").casefold()
    return word[:-2] if word.endswith("'s") else word


def _verbish(word: str, previous: str) -> bool:
    """Whether ``word`` (after ``previous``) ends the subject phrase: a verb or auxiliary."""
    if word in _VERBISH or word in _VERB_CLASS_WORDS or word in _PAST_IRREGULAR:
        return True
    if word.endswith("ed") and word not in _STATE_PARTICIPLES:
        return True
    return (
        word.endswith("s")
        and not word.endswith(("ss", "'s"))
        and previous not in _DETERMINERS
        and not _NUMBER.fullmatch(previous)
        and previous not in _VALUE_WORDS
    )


def _read_chinese(text: str) -> Claim:
    said = _ZH_REASON.sub("", text.strip())
    classes = {name for name, words in _ZH_CLASSES.items() if any(w in said for w in words.split())}
    values = {m.group(0) for m in _ZH_NUMBER.finditer(said)}
    values |= {m.group(0).casefold() for m in _ASCII_RUN.finditer(said)}
    negated = False
    for match in _ANTONYM_ZH.finditer(said):
        if match.group(0) in _ANTONYMS_ZH:
            negated = not negated
    body = _ANTONYM_ZH.sub(
        lambda m: _ANTONYMS_ZH.get(m.group(0)) or _POSITIVE_ZH.get(m.group(0), m.group(0)), said
    )
    body, (final, change, current, additive) = _cue_spans(
        body, (_FINAL_ZH, _CHANGE_ZH, _CURRENT_ZH, _ADDITIVE_ZH)
    )
    if final and "不再" in said:
        negated = not negated  # 不再 is a cue, not a second negation
    plain = _NOT_NEGATION_ZH.sub("", body)
    if _NEGATION_ZH.search(plain):
        negated = not negated
    event = bool(_EVENT_ZH.search(said))
    body = _ZH_NUMBER.sub("#", body)
    body = _ASCII_RUN.sub("#", body)
    body = _NEGATION_ZH.sub("", _NOT_NEGATION_ZH.sub(" ", body))
    final = final or bool(_STOPPED_ZH.search(said))
    subject: frozenset[str] | None = None
    speaker = _ZH_SPEAKER.match(body.strip())
    if speaker:
        subject = frozenset({"@speaker"})
        body = body.strip()[speaker.end() :]
    elif _ZH_PRONOUN.match(body.strip()):
        body = _ZH_PRONOUN.sub("", body.strip())
    segments = [s for s in _ZH_FUNCTION.sub(" ", body).split() if s]
    opening = _ZH_PRONOUN.sub("", _ZH_SPEAKER.sub("", said.strip()))
    opening = _cue_spans(opening, (_FINAL_ZH, _CHANGE_ZH, _CURRENT_ZH), "|")[0]
    bound = _ZH_PREDICATE.search(opening)
    if bound is None:
        bound = re.search(r"\S\s+", opening)
    topic = _ZH_FUNCTION.sub("", opening[: bound.end() - 1]) if bound else ""
    topic = topic.replace("|", "")
    frame: set[str] = set()
    for segment in segments:
        chars = [c for c in segment if c != "#" or len(segment) > 1]
        if len(chars) == 1:
            frame.add(chars[0])
        frame.update(a + b for a, b in itertools.pairwise(chars))
    if subject is None and segments and not _ZH_PRONOUN.match(said.strip()):
        head = segments[0].replace("#", "")
        if len(head) >= 2:
            subject = frozenset({head[:2]})
    return Claim(
        chinese=True,
        subject=subject,
        frame=frozenset(frame),
        classes=frozenset(classes),
        values=frozenset(values),
        negated=negated,
        final=final,
        change=change,
        current=current,
        additive=additive,
        event=event,
        topic=topic if len(topic) >= 2 else None,
    )
