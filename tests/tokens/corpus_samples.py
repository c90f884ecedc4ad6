"""Hand-written text for the token corpus: sentence banks per language and a few whole samples.

The sentences were written for this corpus (a support desk, a small shop, the weather, a
team at work) so that each language is measured on ordinary prose rather than on a word
list. `corpus.py` draws from them deterministically to build texts of several sizes.
"""

from __future__ import annotations

SENTENCES: dict[str, tuple[str, ...]] = {
    "en": (
        "The support team answers most tickets within two hours, even on busy Mondays.",
        "If the invoice looks wrong, reply to this message and we will check it together.",
        "Our warehouse moved last spring, so older tracking links may point to the wrong city.",
        "She asked whether the refund could go back to the original card instead of store credit.",
        "Nobody expected the migration to take three weekends, but the data came through intact.",
        "Please keep the receipt; the warranty covers parts and labour for eighteen months.",
        "The new dashboard shows every conversation, what it cost, and which rules were applied.",
        "He wrote a careful summary of the incident and suggested two changes to the runbook.",
        "Rain is expected in the afternoon, so the outdoor meeting moves to the small room.",
        "Counting tokens before sending a request keeps the model from silently dropping context.",
    ),
    "de": (
        "Das Support-Team beantwortet die meisten Anfragen innerhalb von zwei Stunden.",
        "Wenn die Rechnung falsch aussieht, antworten Sie bitte auf diese Nachricht.",
        "Unser Lager ist im Frühjahr umgezogen, deshalb zeigen ältere Links in die falsche Stadt.",
        "Sie fragte, ob die Rückerstattung auf die ursprüngliche Kreditkarte gehen könne.",
        "Niemand hätte gedacht, dass die Datenübernahme drei Wochenenden dauern würde.",
        "Bitte bewahren Sie den Kassenbon auf; die Garantie gilt achtzehn Monate lang.",
        "Die Übersicht zeigt jedes Gespräch, seine Kosten und die angewandten Regeln.",
        "Am Nachmittag soll es regnen, also findet die Besprechung im kleinen Raum statt.",
    ),
    "fr": (
        "L'équipe d'assistance répond à la plupart des demandes en moins de deux heures.",
        "Si la facture vous semble erronée, répondez à ce message et nous la vérifierons.",
        "Notre entrepôt a déménagé au printemps ; les anciens liens de suivi sont périmés.",
        "Elle a demandé si le remboursement pouvait être versé sur la carte d'origine.",
        "Personne ne s'attendait à ce que la migration prenne trois week-ends entiers.",
        "Conservez votre reçu : la garantie couvre les pièces et la main-d'œuvre pendant dix-huit mois.",
        "Le tableau de bord affiche chaque conversation, son coût et les règles appliquées.",
        "Il pleuvra cet après-midi, donc la réunion aura lieu dans la petite salle.",
    ),
    "es": (
        "El equipo de soporte responde la mayoría de las consultas en menos de dos horas.",
        "Si la factura parece incorrecta, responda a este mensaje y la revisaremos juntos.",
        "Nuestro almacén se mudó en primavera, así que los enlaces antiguos ya no sirven.",
        "Preguntó si el reembolso podía volver a la tarjeta original en lugar de un vale.",
        "Nadie esperaba que la migración durara tres fines de semana, pero salió bien.",
        "Guarde el recibo; la garantía cubre piezas y mano de obra durante dieciocho meses.",
        "El panel muestra cada conversación, cuánto costó y qué reglas se aplicaron.",
        "Se espera lluvia por la tarde, así que la reunión pasa a la sala pequeña.",
    ),
    "pt": (
        "A equipe de suporte responde à maioria dos pedidos em menos de duas horas.",
        "Se a fatura parecer errada, responda a esta mensagem e vamos conferir juntos.",
        "O nosso armazém mudou-se na primavera, por isso os links antigos estão desatualizados.",
        "Ela perguntou se o reembolso poderia voltar para o cartão original.",
        "Ninguém esperava que a migração levasse três fins de semana inteiros.",
        "Guarde o recibo; a garantia cobre peças e mão de obra por dezoito meses.",
    ),
    "pl": (
        "Zespół wsparcia odpowiada na większość zgłoszeń w ciągu dwóch godzin.",
        "Jeśli faktura wygląda na błędną, odpowiedz na tę wiadomość, a sprawdzimy ją razem.",
        "Nasz magazyn przeniósł się wiosną, więc starsze linki prowadzą do złego miasta.",
        "Zapytała, czy zwrot pieniędzy może trafić na pierwotną kartę płatniczą.",
        "Nikt się nie spodziewał, że migracja danych zajmie trzy weekendy.",
        "Po południu ma padać, więc spotkanie przenosimy do małej sali.",
    ),
    "vi": (
        "Đội hỗ trợ trả lời hầu hết các yêu cầu trong vòng hai giờ.",
        "Nếu hóa đơn có vẻ sai, hãy trả lời tin nhắn này và chúng tôi sẽ kiểm tra cùng bạn.",
        "Kho hàng của chúng tôi đã chuyển đi vào mùa xuân, nên các liên kết cũ không còn đúng.",
        "Cô ấy hỏi liệu tiền hoàn lại có thể trả về thẻ ban đầu hay không.",
        "Không ai ngờ việc chuyển dữ liệu lại mất ba cuối tuần liền.",
        "Chiều nay trời sẽ mưa, vì vậy cuộc họp chuyển vào phòng nhỏ.",
    ),
    "ru": (
        "Служба поддержки отвечает на большинство обращений в течение двух часов.",
        "Если счёт выглядит неправильно, ответьте на это сообщение, и мы проверим его вместе.",
        "Весной наш склад переехал, поэтому старые ссылки для отслеживания ведут не туда.",
        "Она спросила, можно ли вернуть деньги на исходную карту, а не бонусами магазина.",
        "Никто не ожидал, что перенос данных займёт три выходных, но всё прошло без потерь.",
        "Пожалуйста, сохраните чек: гарантия распространяется на детали и работу полтора года.",
        "Новая панель показывает каждый разговор, его стоимость и применённые правила.",
        "После обеда обещают дождь, поэтому встреча переносится в маленькую переговорную.",
    ),
    "uk": (
        "Служба підтримки відповідає на більшість звернень протягом двох годин.",
        "Якщо рахунок виглядає неправильно, дайте відповідь на це повідомлення.",
        "Навесні наш склад переїхав, тому старі посилання ведуть не до того міста.",
        "Вона запитала, чи можна повернути гроші на початкову картку.",
        "Ніхто не очікував, що перенесення даних триватиме три вихідні поспіль.",
        "Після обіду обіцяють дощ, тому зустріч переносимо до малої кімнати.",
    ),
    "el": (
        "Η ομάδα υποστήριξης απαντά στα περισσότερα αιτήματα μέσα σε δύο ώρες.",
        "Αν το τιμολόγιο φαίνεται λάθος, απαντήστε σε αυτό το μήνυμα για να το ελέγξουμε.",
        "Η αποθήκη μας μετακόμισε την άνοιξη, οπότε οι παλιοί σύνδεσμοι δεν ισχύουν.",
        "Ρώτησε αν η επιστροφή χρημάτων μπορεί να γίνει στην αρχική κάρτα.",
        "Κανείς δεν περίμενε ότι η μεταφορά των δεδομένων θα κρατούσε τρία σαββατοκύριακα.",
        "Το απόγευμα θα βρέξει, άρα η συνάντηση γίνεται στη μικρή αίθουσα.",
    ),
    "zh": (
        "客服团队通常会在两个小时内回复大部分工单。",
        "如果发票看起来有误，请直接回复这条消息，我们会一起核对。",
        "我们的仓库在春天搬了家，所以旧的物流链接可能显示错误的城市。",
        "她问退款能否退回原来的银行卡，而不是换成店铺积分。",
        "谁也没想到数据迁移花了整整三个周末，好在数据完好无损。",
        "请保留好收据，保修期为十八个月，包括零件和人工。",
        "新的控制台会显示每一次对话、花费多少以及用了哪些规则。",
        "下午预计有雨，所以户外会议改到小会议室举行。",
        "在发送请求之前先统计令牌数，可以避免模型悄悄丢掉上下文。",
    ),
    "ja": (
        "サポートチームは、ほとんどの問い合わせに二時間以内で返信しています。",
        "請求書に誤りがあるようでしたら、このメッセージに返信してください。",
        "倉庫は春に移転したため、古い追跡リンクは別の都市を示すことがあります。",
        "彼女は、返金を元のカードに戻せるかどうかを尋ねました。",
        "データの移行に週末を三回も使うとは、誰も思っていませんでした。",
        "保証期間は十八か月で、部品代と工賃が含まれますので、領収書は大切に保管してください。",
        "午後は雨の予報なので、打ち合わせは小さい会議室で行います。",
        "リクエストを送る前にトークン数を数えておけば、文脈が黙って削られることはありません。",
    ),
    "ko": (
        "지원팀은 대부분의 문의에 두 시간 안에 답변합니다.",
        "청구서가 잘못된 것 같으면 이 메시지에 답장해 주세요. 함께 확인하겠습니다.",
        "창고가 봄에 이전해서 예전 배송 조회 링크는 다른 도시를 가리킬 수 있습니다.",
        "그녀는 환불을 원래 카드로 받을 수 있는지 물었습니다.",
        "데이터 이전에 주말을 세 번이나 쓰게 될 줄은 아무도 몰랐습니다.",
        "오후에 비가 온다고 하니 회의는 작은 회의실에서 하겠습니다.",
    ),
    "ar": (
        "يرد فريق الدعم على معظم الطلبات خلال ساعتين.",
        "إذا بدت الفاتورة غير صحيحة، يرجى الرد على هذه الرسالة وسنراجعها معًا.",
        "انتقل مستودعنا في الربيع، لذلك قد تشير روابط التتبع القديمة إلى مدينة أخرى.",
        "سألت إن كان من الممكن إعادة المبلغ إلى البطاقة الأصلية بدلاً من رصيد المتجر.",
        "لم يتوقع أحد أن يستغرق نقل البيانات ثلاث عطلات نهاية أسبوع.",
        "يرجى الاحتفاظ بالإيصال، فالضمان يشمل القطع والعمل لمدة ثمانية عشر شهرًا.",
        "من المتوقع هطول المطر بعد الظهر، لذلك سينتقل الاجتماع إلى القاعة الصغيرة.",
    ),
    "he": (
        "צוות התמיכה עונה על רוב הפניות תוך שעתיים.",
        "אם החשבונית נראית שגויה, השיבו להודעה הזאת ונבדוק אותה יחד.",
        "המחסן שלנו עבר באביב, ולכן קישורי מעקב ישנים עלולים להצביע על עיר אחרת.",
        "היא שאלה אם אפשר להחזיר את הכסף לכרטיס המקורי.",
        "אחר הצהריים צפוי גשם, ולכן הפגישה עוברת לחדר הקטן.",
    ),
    "hi": (
        "सहायता टीम ज़्यादातर अनुरोधों का जवाब दो घंटे के भीतर देती है।",
        "अगर बिल गलत लगे, तो इस संदेश का जवाब दें और हम मिलकर उसकी जाँच करेंगे।",
        "हमारा गोदाम वसंत में दूसरी जगह चला गया, इसलिए पुराने लिंक गलत शहर दिखा सकते हैं।",
        "उसने पूछा कि क्या पैसे वापस मूल कार्ड पर आ सकते हैं।",
        "किसी ने नहीं सोचा था कि डेटा ले जाने में तीन सप्ताहांत लग जाएँगे।",
        "दोपहर में बारिश की संभावना है, इसलिए बैठक छोटे कमरे में होगी।",
    ),
    "th": (
        "ทีมสนับสนุนตอบคำขอส่วนใหญ่ภายในสองชั่วโมง",
        "หากใบแจ้งหนี้ดูไม่ถูกต้อง โปรดตอบกลับข้อความนี้แล้วเราจะตรวจสอบด้วยกัน",
        "คลังสินค้าของเราย้ายไปเมื่อฤดูใบไม้ผลิ ลิงก์ติดตามพัสดุแบบเก่าจึงอาจแสดงเมืองผิด",
        "เธอถามว่าเงินคืนจะเข้าบัตรใบเดิมได้หรือไม่",
        "บ่ายนี้ฝนจะตก การประชุมจึงย้ายไปห้องเล็ก",
    ),
}

EMOJI = (
    "🙂",
    "😂",
    "🎉",
    "👍",
    "🔥",
    "🚀",
    "❤️",
    "✅",
    "❌",
    "⚠️",
    "🙏",
    "👀",
    "💡",
    "📦",
    "🧾",
    "🕒",
    "👋🏽",
    "👩‍💻",
    "🇫🇷",
    "🇯🇵",
    "🤖",
    "🌧️",
    "☕",
    "📈",
)

README_MD = """\
# Parcel

Parcel keeps track of shipments for a small shop: it reads the carrier's status page,
stores each change, and tells the customer when something needs their attention.

## Quick start

```bash
pip install parcel-tracker
parcel init ./shop
parcel watch --carrier dhl --every 15m
```

## How it works

1. **Fetch** – every `--every` minutes the watcher asks each carrier for the shipments
   that are still open.
2. **Compare** – a change of status (for example `in_transit` → `out_for_delivery`) is
   stored with its time in UTC.
3. **Notify** – the customer gets one short message per change; repeated polling never
   sends the same message twice.

| Setting        | Default | Meaning                                   |
|----------------|---------|-------------------------------------------|
| `every`        | `15m`   | how often carriers are polled             |
| `quiet_hours`  | `22-07` | no messages between these local hours     |
| `max_retries`  | `3`     | attempts before a carrier is marked down  |

> **Note:** carriers limit how often you may ask. Keep `every` at five minutes or more.

See [the guide](https://example.com/parcel/guide) or open an issue at
<https://git.example.com/parcel/issues>.
"""

PYTHON_MODULE = '''\
"""Retry a flaky call with exponential back-off and a deadline."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    first: float = 0.2
    factor: float = 2.0
    ceiling: float = 10.0
    jitter: float = 0.1

    def delays(self, attempts: int) -> list[float]:
        out: list[float] = []
        delay = self.first
        for _ in range(attempts):
            spread = delay * self.jitter
            out.append(min(self.ceiling, delay + random.uniform(-spread, spread)))
            delay *= self.factor
        return out


def retry(call: Callable[[], T], *, attempts: int = 5, deadline: float = 30.0,
          backoff: Backoff | None = None, sleep: Callable[[float], None] = time.sleep) -> T:
    """Call `call` until it succeeds, at most `attempts` times and within `deadline` s."""
    plan = (backoff or Backoff()).delays(attempts - 1)
    started = time.monotonic()
    last: Exception | None = None
    for index in range(attempts):
        try:
            return call()
        except (TimeoutError, ConnectionError) as error:  # only transient failures
            last = error
            if index == attempts - 1 or time.monotonic() - started > deadline:
                break
            sleep(plan[index])
    raise RuntimeError(f"gave up after {attempts} attempts") from last
'''

SUPPORT_CHAT = """\
[09:14] customer: hi!! my order #48213 still says "label created" since friday 😕
[09:15] agent: Hello Dana, sorry about that. Let me look it up — one moment please.
[09:17] agent: The parcel left our warehouse on 2024-03-08 but the carrier has not scanned it yet.
[09:17] agent: I've opened a trace with them (ref TRC-2024-0311-88). You'll hear back within 48h.
[09:18] customer: ok thx. can u refund shipping if it's late? it was €6.90
[09:19] agent: Yes — if it isn't delivered by Thursday I'll refund the €6.90 automatically.
[09:19] customer: 👍👍 perfect
[09:20] agent: Anything else I can help with today?
[09:21] customer: nope, that's all. have a good one!
"""
